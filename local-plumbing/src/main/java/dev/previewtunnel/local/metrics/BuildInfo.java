package dev.previewtunnel.local.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * {@code <prefix>_build_info{version,commit,protocol} 1}: what is running, as a gauge that is always 1 (the
 * Prometheus {@code _info} convention), so a query can join it on the instance or alert on mixed versions.
 */
public final class BuildInfo {
    private BuildInfo() {
    }

    /**
     * @param prefix   e.g. {@code ptun.gateway} (exposed as {@code ptun_gateway_build_info})
     * @param version  the program's version ({@code 0.1.0-SNAPSHOT}) or "unknown"
     * @param commit   the source commit it was built from ({@code 09eddf2a1b3c}, with {@code -dirty} when built
     *                 from a modified tree) or "unknown"
     * @param protocol the tunnel protocol it speaks ({@code ptun.v1})
     */
    public static void register(MeterRegistry registry, String prefix, String version, String commit,
                                String protocol) {
        Gauge.builder(prefix + ".build.info", () -> 1)
                .description("always 1; the labels say which build is running")
                .tag("version", version)
                .tag("commit", commit)
                .tag("protocol", protocol)
                .register(registry);
    }
}
