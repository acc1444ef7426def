package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.TunnelError;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/** Gateway counters and gauges (Micrometer); names are documented in docs/operations.md. */
public final class GatewayMetrics {
    private final MeterRegistry registry;
    private final Counter opened;
    private final Counter dials;

    GatewayMetrics(MeterRegistry registry, LiveStreams live) {
        this.registry = registry;
        this.opened = Counter.builder("ptun.gateway.streams.opened").register(registry);
        this.dials = Counter.builder("ptun.gateway.dials").description("TCP connects attempted to targets")
                .register(registry);
        registry.gauge("ptun.gateway.streams.live", live, LiveStreams::size);
    }

    void opened() {
        opened.increment();
    }

    void dialAttempted() {
        dials.increment();
    }

    /** TCP connects attempted so far: the attack-matrix tests assert a refusal never reached this point. */
    public long dialAttempts() {
        return (long) dials.count();
    }

    void refused(TunnelError error, String detail) {
        Counter.builder("ptun.gateway.streams.refused")
                .tag("code", error.code())
                .tag("reason", detail == null ? "" : detail)
                .register(registry)
                .increment();
    }

    public MeterRegistry registry() {
        return registry;
    }
}
