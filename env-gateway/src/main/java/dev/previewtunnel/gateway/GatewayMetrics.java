package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.TunnelError;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/** Gateway counters and gauges (Micrometer); names are documented in docs/operations.md. */
public final class GatewayMetrics {
    private final MeterRegistry registry;
    private final Counter opened;

    GatewayMetrics(MeterRegistry registry, LiveStreams live) {
        this.registry = registry;
        this.opened = Counter.builder("ptun.gateway.streams.opened").register(registry);
        registry.gauge("ptun.gateway.streams.live", live, LiveStreams::size);
    }

    void opened() {
        opened.increment();
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
