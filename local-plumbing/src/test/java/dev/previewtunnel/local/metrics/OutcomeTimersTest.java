package dev.previewtunnel.local.metrics;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

class OutcomeTimersTest {
    @Test
    void oneTimerPerOutcomeTaggedAndRecordedInTheRegistry() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        OutcomeTimers timers = new OutcomeTimers(registry, "ptun.test.open", "an open");
        Timer ok = timers.of("ok");
        assertSame(ok, timers.of("ok"), "the ok timer is kept");
        Timer refused = timers.of("grant_refused");
        assertNotSame(ok, refused);
        assertSame(refused, timers.of("grant_refused"), "the registry answers the same meter for the same tags");
        ok.record(Duration.ofMillis(3));
        ok.record(Duration.ofMillis(4));
        refused.record(Duration.ofMillis(1));
        assertEquals(2, registry.get("ptun.test.open").tag("outcome", "ok").timer().count());
        assertEquals(1, registry.get("ptun.test.open").tag("outcome", "grant_refused").timer().count());
        assertEquals("an open", registry.get("ptun.test.open").tag("outcome", "ok").timer().getId().getDescription());
    }
}
