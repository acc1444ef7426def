package dev.previewtunnel.local.metrics;

import io.micrometer.core.instrument.Clock;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusRenameFilter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.registry.PrometheusScrapeRequest;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;

import java.util.Set;
import java.util.function.Predicate;

/**
 * The Micrometer registry the programs serve, made to follow the Prometheus naming conventions:
 * <ul>
 *   <li>Prometheus' standard process names ({@link PrometheusRenameFilter}: {@code process_open_fds},
 *       {@code process_max_fds}, {@code process_start_time_seconds}: the one timestamp not named
 *       {@code _timestamp_seconds}, as every Prometheus client library names it); {@code system_cpus} for
 *       Micrometer's {@code system_cpu_count} (a gauge may not end in {@code _count});</li>
 *   <li>CPU time in seconds: Micrometer's {@code process.cpu.time} (nanoseconds, {@code process_cpu_time_ns_total})
 *       is denied; {@link RuntimeMeters} registers {@code process_cpu_seconds_total} instead;</li>
 *   <li>no {@code _max} series of timers: Micrometer adds to every timer a gauge of the largest sample in a
 *       rolling two-minute window, which a scrape every 15-60 s turns into noise beside the histogram buckets
 *       (our timers all have buckets). {@link #KEPT_MAX} lists the one kept: the longest GC pause, the only tail
 *       signal of a timer without buckets.</li>
 * </ul>
 */
public final class PrometheusRegistries {
    /** The {@code _max} series kept, each because it is the only view of its timer's tail. */
    public static final Set<String> KEPT_MAX = Set.of("jvm_gc_pause_seconds_max");

    private static final Predicate<String> EXPOSED = name -> !name.endsWith("_max") || KEPT_MAX.contains(name);

    private PrometheusRegistries() {
    }

    public static PrometheusMeterRegistry newRegistry() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT,
                new WithoutRollingMax(), Clock.SYSTEM);
        registry.config()
                .meterFilter(MeterFilter.deny(id -> id.getName().equals("process.cpu.time")))
                .meterFilter(new PrometheusRenameFilter())
                .meterFilter(new MeterFilter() {
                    @Override
                    public Meter.Id map(Meter.Id id) {
                        if (id.getName().endsWith(".fds")) {
                            // Prometheus' process_open_fds and process_max_fds: a count has no unit suffix.
                            return id.withBaseUnit(null);
                        }
                        if (id.getName().equals("system.cpu.count")) {
                            // A gauge named ..._count reads as a histogram's or summary's series (promtool
                            // refuses it).
                            return id.withName("system.cpus");
                        }
                        return id;
                    }
                });
        return registry;
    }

    /** Every scrape leaves out the {@code _max} series not in {@link #KEPT_MAX}. */
    private static final class WithoutRollingMax extends PrometheusRegistry {
        @Override
        public MetricSnapshots scrape() {
            return super.scrape(EXPOSED);
        }

        @Override
        public MetricSnapshots scrape(PrometheusScrapeRequest request) {
            return super.scrape(EXPOSED, request);
        }
    }
}
