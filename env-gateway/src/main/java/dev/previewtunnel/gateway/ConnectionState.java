package dev.previewtunnel.gateway;

/**
 * Per tunnel connection: its id for audit lines, its streams' shares of the queued-bytes budget and the dials in
 * progress on it. Touched only on the connection's event loop (its streams share that loop).
 */
final class ConnectionState {
    final String id;
    /** Each stream's share of the connection's budget for queued target bytes. */
    final StreamWriteShares writeShares;
    int pendingDials;

    private ConnectionState(String id, StreamWriteShares writeShares) {
        this.id = id;
        this.writeShares = writeShares;
    }

    /** The state of a new connection of a gateway configured by {@code config}. */
    static ConnectionState of(String id, GatewayConfig config) {
        return new ConnectionState(id, new StreamWriteShares(config.limits().queuedBytesPerConnection(),
                config.mux().streamWriteHighWaterMark()));
    }
}
