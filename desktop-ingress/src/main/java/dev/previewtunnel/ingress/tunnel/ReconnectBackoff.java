package dev.previewtunnel.ingress.tunnel;

import java.time.Duration;
import java.util.function.LongUnaryOperator;

/**
 * The delay before a tunnel connection's next connect attempt: exponential in the consecutive failures
 * ({@code min} doubling, capped at {@code max}) with <em>equal jitter</em>: half of the capped step is fixed, the
 * other half uniformly random. The fixed half keeps a gateway that is down from being hammered by near-zero
 * delays; the random half keeps many desktops from reconnecting in lockstep after a gateway restart.
 *
 * <p>Not thread-safe: each tunnel slot owns one and touches it under its own monitor; each SSH link (ingress.ssh)
 * owns one and touches it on its own thread.
 */
public final class ReconnectBackoff {
    /** Doublings stop here: {@code min << 8} is already past any sensible cap. */
    private static final int MAX_DOUBLINGS = 8;

    private final long minMillis;
    private final long maxMillis;
    /** Given a bound {@code n}, returns a uniformly random long in {@code [0, n)}. */
    private final LongUnaryOperator random;
    private int failures;

    public ReconnectBackoff(Duration min, Duration max, LongUnaryOperator random) {
        if (min.isNegative() || min.isZero() || max.compareTo(min) < 0) {
            throw new IllegalArgumentException("need 0 < min <= max");
        }
        this.minMillis = min.toMillis();
        this.maxMillis = max.toMillis();
        this.random = random;
    }

    /** Records a failed attempt (or a lost connection) and returns how long to wait before the next attempt. */
    public long nextDelayMillis() {
        long step = Math.min(minMillis << Math.min(failures, MAX_DOUBLINGS), maxMillis);
        failures++;
        long half = step / 2;
        return step - half + random.applyAsLong(half + 1);
    }

    /** A connection came up: the next failure starts from {@code min} again. */
    public void reset() {
        failures = 0;
    }

    int failures() {
        return failures;
    }
}
