package dev.previewtunnel.local.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StreamStallsTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final StreamStalls stalls = new StreamStalls(registry, "ptun.test", "the peer's");

    private double stalledNow() {
        return registry.get("ptun.test.streams.stalled").gauge().value();
    }

    private Timer timer() {
        return registry.get("ptun.test.stream.stalled").timer();
    }

    @Test
    void aStallCountsWhileItLastsAndIsRecordedOnceWhenItEnds() {
        long a = stalls.writabilityChanged(0, false);
        assertNotEquals(0, a, "stalled: a start is kept");
        assertEquals(1, stalledNow());
        assertEquals(a, stalls.writabilityChanged(a, false), "unwritable again: the same stall");
        long b = stalls.writabilityChanged(0, false);
        assertEquals(2, stalledNow(), "a second stream's stall");
        assertEquals(0, stalls.writabilityChanged(a, true));
        assertEquals(1, stalledNow());
        assertEquals(1, timer().count(), "recorded at its end, not before");
        assertEquals(0, stalls.ended(b), "the stream closed while stalled");
        assertEquals(0, stalledNow());
        assertEquals(2, timer().count());
        assertTrue(timer().totalTime(TimeUnit.SECONDS) < 60, "recorded the stalls' lengths, not their start times: "
                + timer().totalTime(TimeUnit.SECONDS) + " s");
    }

    @Test
    void writableStreamsRecordNothing() {
        assertEquals(0, stalls.writabilityChanged(0, true));
        assertEquals(0, stalls.ended(0));
        assertEquals(0, stalledNow());
        assertEquals(0, timer().count());
    }

    @Test
    void theTimerHasTheStallBucketsAndTheDescriptionNamesWhoseWindow() {
        Timer t = timer();
        assertEquals("time a stream could not be written: the peer's flow-control window was exhausted or the write "
                + "buffer was above its high-water mark", t.getId().getDescription());
        double[] buckets = java.util.Arrays.stream(t.takeSnapshot().histogramCounts())
                .mapToDouble(b -> b.bucket(TimeUnit.MILLISECONDS)).toArray();
        assertArrayEquals(new double[] {1, 10, 100, 1_000, 10_000, 60_000}, buckets, "1 ms to 60 s, as both sides had");
        Gauge g = registry.get("ptun.test.streams.stalled").gauge();
        assertEquals("streams that cannot be written now: a stall in progress", g.getId().getDescription());
    }
}
