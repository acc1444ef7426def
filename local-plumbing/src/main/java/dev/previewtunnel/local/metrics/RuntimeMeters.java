package dev.previewtunnel.local.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;

import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;

/**
 * The JVM and process meters every Prometheus user expects, bound to one registry for as long as a metrics
 * endpoint serves it: Micrometer's memory, GC, thread and class-loading binders and its processor, uptime and
 * file-descriptor binders, plus {@code process_cpu_seconds_total} in seconds (Micrometer's own CPU-time counter is
 * in nanoseconds, {@code process_cpu_time_ns_total}, and is filtered out by {@link PrometheusRegistries}).
 * {@link #close()} unhooks the GC binder's notification listeners (the others hold nothing).
 */
public final class RuntimeMeters implements AutoCloseable {
    private final JvmGcMetrics gc;

    private RuntimeMeters(JvmGcMetrics gc) {
        this.gc = gc;
    }

    public static RuntimeMeters bindTo(MeterRegistry registry) {
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            FunctionCounter.builder("process.cpu", sun, b -> b.getProcessCpuTime() / 1e9)
                    .baseUnit("seconds")
                    .description("CPU time used by the process (user and system)")
                    .register(registry);
        }
        JvmGcMetrics gc = new JvmGcMetrics();
        gc.bindTo(registry);
        return new RuntimeMeters(gc);
    }

    @Override
    public void close() {
        gc.close();
    }
}
