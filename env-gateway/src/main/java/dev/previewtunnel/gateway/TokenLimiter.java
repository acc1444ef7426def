package dev.previewtunnel.gateway;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Per connection token (by its jti), across all its connections: at most {@code connectionsPerToken} open
 * connections, and a {@link FailureBudget} of failed grant verifications shared by them, so reconnecting does not
 * buy a fresh budget. An entry lives while its token has connections, and after the last one closes until its
 * budget has refilled (forgetting it earlier would hand a reconnecting attacker a full budget); idle entries are
 * swept when the map grows, so it holds about as many entries as tokens active in the last cool-down.
 */
final class TokenLimiter {
    /** Above this many entries, each new connection sweeps the idle ones. */
    static final int SWEEP_ABOVE = 1024;

    private final GatewayLimits limits;
    private final ConcurrentHashMap<String, Token> tokens = new ConcurrentHashMap<>();

    TokenLimiter(GatewayLimits limits) {
        this.limits = limits;
    }

    /** The shared state of one token's connections; its methods may run on any connection's loop. */
    final class Token {
        private final String jti;
        private final FailureBudget grantFailures;
        private int connections;

        private Token(String jti, long now) {
            this.jti = jti;
            this.grantFailures = new FailureBudget(limits.grantFailuresPerSecond(),
                    limits.grantFailureCoolDown().toNanos(), now);
        }

        /**
         * Reserves a grant verification; false while this token cools down or has spent its budget: the stream
         * must then be refused without verifying. A true is followed by {@link #grantVerified(boolean)}.
         */
        synchronized boolean reserveGrantVerification() {
            return grantFailures.tryReserve(System.nanoTime());
        }

        synchronized void grantVerified(boolean ok) {
            if (ok) {
                grantFailures.succeeded();
            } else {
                grantFailures.failed(System.nanoTime());
            }
        }

        /** One of this token's connections closed. */
        void disconnected() {
            synchronized (this) {
                connections--;
            }
            forgetIfIdle(this);
        }

        private synchronized boolean idle(long now) {
            return connections <= 0 && grantFailures.idle(now);
        }
    }

    /**
     * Counts one more connection of the token {@code jti}; returns its shared state, or null when the token already
     * holds {@code connectionsPerToken} connections. The caller calls {@link Token#disconnected()} when it closes.
     */
    Token connect(String jti) {
        long now = System.nanoTime();
        if (tokens.size() > SWEEP_ABOVE) {
            tokens.values().forEach(this::forgetIfIdle);
        }
        while (true) {
            Token t = tokens.computeIfAbsent(jti, k -> new Token(k, now));
            synchronized (t) {
                if (tokens.get(jti) != t) {
                    continue; // forgotten meanwhile: take the fresh entry
                }
                if (t.connections >= limits.connectionsPerToken()) {
                    return null;
                }
                t.connections++;
                return t;
            }
        }
    }

    int trackedTokens() {
        return tokens.size();
    }

    private void forgetIfIdle(Token t) {
        synchronized (t) {
            if (t.idle(System.nanoTime())) {
                tokens.remove(t.jti, t);
            }
        }
    }
}
