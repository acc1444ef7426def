package dev.previewtunnel.gateway;

import dev.previewtunnel.grants.GrantException;
import dev.previewtunnel.grants.VerifiedToken;
import dev.previewtunnel.mux.server.TunnelServerUpgradeHandler.ConnectionAuthenticator;
import dev.previewtunnel.mux.server.TunnelServerUpgradeHandler.RefusedException;
import io.netty.channel.Channel;
import io.netty.util.AttributeKey;

import java.time.Instant;

/**
 * Checks the connection token of an upgrade, in this order: the gateway-wide budget of failing tokens
 * ({@link HandshakeFailureGuard}: refused 429 unverified when spent), the token's signature and claims (401), the
 * token's connection count ({@link TokenLimiter}: 429 at the cap). An accepted connection counts against its
 * token until it closes; its shared per-token state is left on the channel for the stream handlers.
 */
final class TokenAuthenticator implements ConnectionAuthenticator {
    static final AttributeKey<TokenLimiter.Token> TOKEN = AttributeKey.valueOf("ptun.tokenLimits");

    private final GatewayContext context;
    private final HandshakeFailureGuard guard;

    TokenAuthenticator(GatewayContext context) {
        this.context = context;
        this.guard = new HandshakeFailureGuard(context.config().limits().tokenFailuresPerSecond());
    }

    @Override
    public Object authenticate(String token) {
        throw new UnsupportedOperationException("the upgrade handler calls authenticate(channel, token)");
    }

    @Override
    public Object authenticate(Channel channel, String token) throws RefusedException {
        HandshakeFailureGuard.Key key = HandshakeFailureGuard.Key.of(token);
        if (!guard.mayVerify(key, Instant.now())) {
            refused(null, "too_many_failed_handshakes");
            throw new RefusedException(429, "too_many_failed_handshakes",
                    "too many failed connection tokens at this gateway; retry later");
        }
        VerifiedToken verified;
        try {
            verified = context.verifier().verifyConnectionToken(token, context.config().environment());
            context.metrics().tokenVerified(true);
        } catch (GrantException e) {
            context.metrics().tokenVerified(false);
            guard.failed();
            refused(null, e.failure().tokenCode());
            // The wire keeps the grant_* code: the ingress's doctor reads it (docs/mux-protocol.md, handshake).
            throw new RefusedException("token_refused", "connection token refused (" + e.failure().code() + ")");
        }
        guard.verified(key, verified.expiresAt());
        TokenLimiter.Token shared = context.tokens().connect(verified.jti());
        if (shared == null) {
            refused(verified.jti(), "too_many_connections");
            throw new RefusedException(429, "too_many_connections", "this connection token already holds "
                    + context.config().limits().connectionsPerToken() + " connections");
        }
        channel.closeFuture().addListener(f -> shared.disconnected());
        channel.attr(TOKEN).set(shared);
        return verified;
    }

    private void refused(String tokenId, String code) {
        context.metrics().tokenRefused(code);
        if (tokenId == null) {
            context.audit().refused(GatewayAuditEvent.CONNECTION_REFUSED, line -> { }, "code", code);
        } else {
            context.audit().refused(GatewayAuditEvent.CONNECTION_REFUSED, line -> { }, "tokenId", tokenId, "code", code);
        }
    }
}
