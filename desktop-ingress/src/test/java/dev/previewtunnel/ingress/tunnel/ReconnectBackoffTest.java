package dev.previewtunnel.ingress.tunnel;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The pool's reconnect delays: exponential, capped, equal jitter from the injected random source, reset on success. */
class ReconnectBackoffTest {
    private static final Duration MIN = Duration.ofMillis(100);
    private static final Duration MAX = Duration.ofSeconds(15);

    @Test
    void withNoJitterTheFixedHalfDoublesUpToTheCap() {
        ReconnectBackoff b = new ReconnectBackoff(MIN, MAX, n -> 0);
        List<Long> delays = delays(b, 12);
        System.out.println("{\"test\":\"backoff_min_jitter\",\"delays\":" + delays + "}");
        // Equal jitter: the step is 100, 200, 400 ... capped at 15000; the delay is at least half of it.
        assertEquals(List.of(50L, 100L, 200L, 400L, 800L, 1600L, 3200L, 6400L, 7500L, 7500L, 7500L, 7500L), delays);
    }

    @Test
    void withMaximalJitterTheDelayIsTheWholeStepAndNeverPastTheCap() {
        ReconnectBackoff b = new ReconnectBackoff(MIN, MAX, n -> n - 1);
        List<Long> delays = delays(b, 12);
        System.out.println("{\"test\":\"backoff_max_jitter\",\"delays\":" + delays + "}");
        assertEquals(List.of(100L, 200L, 400L, 800L, 1600L, 3200L, 6400L, 12800L, 15000L, 15000L, 15000L, 15000L),
                delays);
    }

    @Test
    void realRandomDelaysGrowStayWithinTheirStepAndUnderTheCap() {
        ReconnectBackoff b = new ReconnectBackoff(MIN, MAX, new Random(7)::nextLong);
        long step = MIN.toMillis();
        for (int i = 0; i < 40; i++) {
            long d = b.nextDelayMillis();
            assertTrue(d >= step / 2 && d <= step, "attempt " + i + ": " + d + " outside [" + step / 2 + ", " + step + "]");
            assertTrue(d <= MAX.toMillis(), "attempt " + i + ": " + d);
            step = Math.min(step * 2, MAX.toMillis());
        }
    }

    @Test
    void delaysVaryWithTheRandomSource() {
        List<Long> a = delays(new ReconnectBackoff(MIN, MAX, new Random(1)::nextLong), 10);
        List<Long> b = delays(new ReconnectBackoff(MIN, MAX, new Random(2)::nextLong), 10);
        List<Long> again = delays(new ReconnectBackoff(MIN, MAX, new Random(1)::nextLong), 10);
        System.out.println("{\"test\":\"backoff_seeds\",\"seed1\":" + a + ",\"seed2\":" + b + "}");
        assertNotEquals(a, b, "two desktops with different randomness must not reconnect in lockstep");
        assertEquals(a, again, "the delay is a function of the random source only");
    }

    @Test
    void aSuccessResetsTheSequence() {
        ReconnectBackoff b = new ReconnectBackoff(MIN, MAX, n -> 0);
        delays(b, 6);
        assertEquals(6, b.failures());
        b.reset();
        assertEquals(0, b.failures());
        assertEquals(List.of(50L, 100L, 200L), delays(b, 3));
    }

    @Test
    void nonsensicalBoundsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new ReconnectBackoff(Duration.ZERO, MAX, n -> 0));
        assertThrows(IllegalArgumentException.class, () -> new ReconnectBackoff(MAX, MIN, n -> 0));
    }

    private static List<Long> delays(ReconnectBackoff b, int n) {
        List<Long> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(b.nextDelayMillis());
        }
        return out;
    }
}
