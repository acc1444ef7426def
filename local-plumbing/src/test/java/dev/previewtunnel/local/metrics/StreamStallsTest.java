package dev.previewtunnel.local.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

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
        assertTrue(t.getId().getDescription().contains("the peer's flow-control window"), t.getId().getDescription());
        assertEquals(StreamStalls.BUCKETS.length, t.takeSnapshot().histogramCounts().length);
        Gauge g = registry.get("ptun.test.streams.stalled").gauge();
        assertEquals("streams that cannot be written now: a stall in progress", g.getId().getDescription());
    }
}
