package dev.previewtunnel.gateway;

import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.RevocationList;
import dev.previewtunnel.local.audit.AuditLog;

import java.util.concurrent.Executor;

/** What every connection and stream handler of one gateway shares. */
record GatewayContext(GatewayConfig config, GrantVerifier verifier, RevocationList revocations, TargetDialer dialer,
                      LiveStreams liveStreams, SessionLimiter limiter, GatewayMetrics metrics, AuditLog audit,
                      Executor blockingExecutor, TokenLimiter tokens) {

    /** A context with fresh per-token limits. */
    GatewayContext(GatewayConfig config, GrantVerifier verifier, RevocationList revocations, TargetDialer dialer,
                   LiveStreams liveStreams, SessionLimiter limiter, GatewayMetrics metrics, AuditLog audit,
                   Executor blockingExecutor) {
        this(config, verifier, revocations, dialer, liveStreams, limiter, metrics, audit, blockingExecutor,
                new TokenLimiter(config.limits()));
    }
}
