package dev.previewtunnel.local.metrics;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.time.Duration;
import java.util.Objects;

/**
 * One latency timer per {@code outcome} tag ({@code ok} or an error code), each registered at its first use. The
 * {@code ok} one is kept once registered: it is the one recorded on every successful stream open, and the
 * registry's id building and lookup cost more than the recording (docs/performance.md, finding 32). The gateway's
 * and the ingress's stream-open timers are both this.
 */
public final class OutcomeTimers {
    /** Histogram buckets (le) of the latency timers: 1 ms to 10 s. */
    public static final Duration[] LATENCY_BUCKETS = {Duration.ofMillis(1), Duration.ofMillis(5),
            Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50), Duration.ofMillis(100),
            Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofMillis(2500),
            Duration.ofSeconds(5), Duration.ofSeconds(10)};

    public static final String OK = "ok";

    private final MeterRegistry registry;
    private final String name;
    private final String description;
    private volatile Timer ok;

    public OutcomeTimers(MeterRegistry registry, String name, String description) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.name = Objects.requireNonNull(name, "name");
        this.description = Objects.requireNonNull(description, "description");
    }

    /** The timer tagged {@code outcome}. */
    public Timer of(String outcome) {
        boolean isOk = OK.equals(outcome);
        Timer t = isOk ? ok : null;
        if (t == null) {
            t = Timer.builder(name).description(description).tag("outcome", outcome)
                    .serviceLevelObjectives(LATENCY_BUCKETS).register(registry);
            if (isOk) {
                ok = t; // the registry returns the same meter every time: a race registers nothing twice
            }
        }
        return t;
    }
}
