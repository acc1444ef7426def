package dev.previewtunnel.gateway;

/**
 * Per tunnel connection: its id for audit lines, its streams' shares of the queued-bytes budget, the dials in
 * progress on it and its token's shared limits. Touched only on the connection's event loop (its streams share that loop).
 */
final class ConnectionState {
    final String id;
    /** Each stream's share of the connection's budget for queued target bytes. */
    final StreamWriteShares writeShares;
    int pendingDials;
    /** The jti of the connection token ("" when unknown), and the state its connections share (or null). */
    final String tokenId;
    final TokenLimiter.Token token;

    private ConnectionState(String id, StreamWriteShares writeShares, String tokenId, TokenLimiter.Token token) {
        this.id = id;
        this.writeShares = writeShares;
        this.tokenId = tokenId;
        this.token = token;
    }

    /** The state of a new connection authenticated by the token {@code tokenId}, limited by {@code token}. */
    static ConnectionState of(String id, GatewayConfig config, String tokenId, TokenLimiter.Token token) {
        return new ConnectionState(id, new StreamWriteShares(config.limits().queuedBytesPerConnection(),
                config.mux().streamWriteHighWaterMark()), tokenId, token);
    }
}
