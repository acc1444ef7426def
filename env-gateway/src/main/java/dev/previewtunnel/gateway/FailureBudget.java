package dev.previewtunnel.gateway;

/**
 * A budget of failed verifications: a token bucket of {@code perSecond} failures (at most one second's worth at
 * once) and, once it is spent, a cool-down during which nothing is verified at all. So a key that keeps failing
 * costs at most {@code perSecond} verifications per cool-down, whatever rate it sends at. Not thread-safe: the
 * owner synchronizes.
 */
final class FailureBudget {
    private final double perSecond;
    private final long coolDownNanos;
    private double tokens;
    private long refilledAt;
    private long coolingUntil;
    private boolean cooling;

    FailureBudget(double perSecond, long coolDownNanos, long now) {
        this.perSecond = perSecond;
        this.coolDownNanos = coolDownNanos;
        this.tokens = perSecond;
        this.refilledAt = now;
    }

    /** True when a verification may run now; false while cooling down or with the budget spent. */
    boolean mayVerify(long now) {
        refill(now);
        if (cooling && now - coolingUntil >= 0) {
            cooling = false;
        }
        return !cooling && tokens >= 1;
    }

    /** One verification failed: spends one unit, and starts the cool-down when that empties the budget. */
    void failed(long now) {
        refill(now);
        tokens = Math.max(0, tokens - 1);
        if (tokens < 1 && !cooling) {
            cooling = coolDownNanos > 0;
            coolingUntil = now + coolDownNanos;
        }
    }

    /** Back to its initial state: nothing spent, not cooling (so its holder may forget it). */
    boolean idle(long now) {
        return mayVerify(now) && tokens >= perSecond;
    }

    private void refill(long now) {
        tokens = Math.min(perSecond, tokens + (now - refilledAt) / 1e9 * perSecond);
        refilledAt = now;
    }
}
