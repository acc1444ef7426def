package dev.previewtunnel.gateway;

/**
 * A budget of failed verifications: a token bucket of {@code perSecond} failures (at most one second's worth at
 * once) and, once it is empty, a cool-down (none when zero) during which nothing is verified at all. A key failing
 * slower than {@code perSecond} is verified each time; one failing faster gets about one bucket per cool-down. So
 * failed verifications stay within {@code perSecond} per second plus one bucket, whatever rate the key sends at.
 * Not thread-safe: the owner synchronizes.
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

    /**
     * Reserves one unit for a verification about to run; false (nothing reserved) while cooling down or with the
     * budget spent. The caller then calls {@link #succeeded()} or {@link #failed(long)}: reserving first keeps
     * verifications running at once on several event loops within the budget too.
     */
    boolean tryReserve(long now) {
        refill(now);
        if (cooling && now - coolingUntil >= 0) {
            cooling = false;
        }
        if (cooling || tokens < 1) {
            return false;
        }
        tokens -= 1;
        return true;
    }

    /** The reserved verification succeeded: its unit is given back. */
    void succeeded() {
        tokens = Math.min(perSecond, tokens + 1);
    }

    /** The reserved verification failed: its unit stays spent, and an empty budget starts the cool-down. */
    void failed(long now) {
        refill(now);
        if (tokens < 1 && !cooling) {
            cooling = coolDownNanos > 0;
            coolingUntil = now + coolDownNanos;
        }
    }

    /** Back to its initial state: nothing spent, not cooling (so its holder may forget it). */
    boolean idle(long now) {
        refill(now);
        return (!cooling || now - coolingUntil >= 0) && tokens >= perSecond;
    }

    private void refill(long now) {
        tokens = Math.min(perSecond, tokens + (now - refilledAt) / 1e9 * perSecond);
        refilledAt = now;
    }
}
