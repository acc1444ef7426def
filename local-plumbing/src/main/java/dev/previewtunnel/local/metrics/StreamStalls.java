package dev.previewtunnel.local.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The time one side's streams spend unwritable: a histogram of each stall once it ends ({@code PREFIX.stream.stalled})
 * and a gauge of the stalls going on ({@code PREFIX.streams.stalled}), which the histogram sees only at their end (a
 * reader that stopped). The gateway's and the ingress's stream meters both keep their stalls here. A meter holds its
 * stream's stall start (0 while writable) and passes it in, so a stream costs no object of its own.
 */
public final class StreamStalls {
    /** Histogram buckets (le) of the stall timer: 1 ms to 60 s. */
    static final Duration[] BUCKETS = {Duration.ofMillis(1), Duration.ofMillis(10), Duration.ofMillis(100),
            Duration.ofSeconds(1), Duration.ofSeconds(10), Duration.ofSeconds(60)};

    private final Timer stalled;
    private final AtomicInteger stalledNow = new AtomicInteger();

    /** {@code window}: whose flow-control window a stall waits for, in the timer's description ("the gateway's"). */
    public StreamStalls(MeterRegistry registry, String prefix, String window) {
        this.stalled = Timer.builder(prefix + ".stream.stalled")
                .description("time a stream could not be written: " + window + " flow-control window was exhausted "
                        + "or the write buffer was above its high-water mark")
                .serviceLevelObjectives(BUCKETS)
                .register(registry);
        Gauge.builder(prefix + ".streams.stalled", stalledNow, AtomicInteger::get)
                .description("streams that cannot be written now: a stall in progress").register(registry);
    }

    /** A stream's writability changed; returns the stall start its meter keeps from now on (0: writable). */
    public long writabilityChanged(long stallStart, boolean writable) {
        if (writable) {
            return ended(stallStart);
        }
        if (stallStart != 0) {
            return stallStart; // still the same stall
        }
        stalledNow.incrementAndGet();
        long now = System.nanoTime(); // any value, negative too; only 0 is taken (it means writable)
        return now != 0 ? now : 1;
    }

    /** The stream became writable or closed: a stall in progress ends and is recorded. Returns 0. */
    public long ended(long stallStart) {
        if (stallStart != 0) {
            stalled.record(System.nanoTime() - stallStart, TimeUnit.NANOSECONDS);
            stalledNow.decrementAndGet();
        }
        return 0;
    }
}
