package dev.previewtunnel.gateway;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Per browser session: at most {@code streamsPerSession} concurrent streams, and stream opens limited by a
 * token bucket ({@code opensPerSecond} sustained, {@code openBurst} at once). Counted after the grant verified,
 * so only a grant holder can spend its session's budget. Idle sessions are forgotten, so the map stays as
 * small as the set of active sessions.
 */
final class SessionLimiter {
    private final GatewayLimits limits;
    private final ConcurrentHashMap<String, Bucket> sessions = new ConcurrentHashMap<>();

    SessionLimiter(GatewayLimits limits) {
        this.limits = limits;
    }

    private static final class Bucket {
        int open;
        double tokens;
        long refilledAt;
    }

    /** Counts one more stream for {@code session}; returns null when allowed, else the refusal detail. */
    String tryOpen(String session) {
        long now = System.nanoTime();
        Bucket b = sessions.computeIfAbsent(session, s -> {
            Bucket fresh = new Bucket();
            fresh.tokens = limits.openBurst();
            fresh.refilledAt = now;
            return fresh;
        });
        synchronized (b) {
            refill(b, now);
            if (b.open >= limits.streamsPerSession()) {
                return "session_stream_limit";
            }
            if (b.tokens < 1) {
                return "session_rate_limit";
            }
            b.tokens -= 1;
            b.open++;
            return null;
        }
    }

    void closed(String session) {
        Bucket b = sessions.get(session);
        if (b == null) {
            return;
        }
        synchronized (b) {
            b.open--;
            refill(b, System.nanoTime());
            if (b.open <= 0 && b.tokens >= limits.openBurst()) {
                sessions.remove(session, b);
            }
        }
    }

    private void refill(Bucket b, long now) {
        double elapsed = (now - b.refilledAt) / 1e9;
        b.tokens = Math.min(limits.openBurst(), b.tokens + elapsed * limits.opensPerSecond());
        b.refilledAt = now;
    }
}
