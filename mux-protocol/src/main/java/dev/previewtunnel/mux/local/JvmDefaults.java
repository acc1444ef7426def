package dev.previewtunnel.mux.local;

import io.netty.util.internal.PlatformDependent;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The JVM options of the long-running commands ({@code serve}, {@code run}, {@code open}): one source of truth for
 * the package launchers (dist's build-image.sh spells them out), the gateway that {@code open} starts on an SSH host
 * (RemoteInstall), the documented {@code java ... -jar} lines and the benchmark's default; LongRunningJvmFlagsTest
 * (security-spikes) fails when one of them disagrees.
 *
 * <p>Why these (docs/operations.md "Memory and JVM defaults", issue 21's NMT tables): the serial collector has
 * almost no native structures (G1's took 37-41 MiB per process here); a small initial heap, because the JVM's
 * default initial heap is 1/64 of the machine's memory, clamped to -Xmx, so the whole heap was committed and
 * touched from the start; a 64 MiB ceiling, above the largest heap the benchmark's memory figures committed (38 MiB);
 * direct memory bounded on its own (its default is -Xmx, too small for the gateway's queues, finding 3).
 */
public final class JvmDefaults {
    /**
     * The memory options, one string so that javac inlines it where the classes are only on the compile class
     * path (the benchmark runner).
     */
    public static final String MEMORY_OPTIONS = "-XX:+UseSerialGC -Xms16m -Xmx64m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=20 -XX:MaxDirectMemorySize=256m -XX:TrimNativeHeapInterval=1000";
    /** The options of serve, run and open: {@link FatalErrors#JVM_FLAGS} and {@link #MEMORY_OPTIONS}. */
    public static final List<String> LONG_RUNNING_FLAGS = Stream.concat(FatalErrors.JVM_FLAGS.stream(),
            Stream.of(MEMORY_OPTIONS.split(" "))).toList();
    /** Options the package launchers append last (so an -Xmx there wins over the defaults'). */
    public static final String OPTIONS_ENV = "PREVIEW_TUNNEL_JAVA_OPTIONS";

    private JvmDefaults() {
    }

    /** This JVM's limits, for doctor and status: "max heap 64 MiB, max direct memory 256 MiB, collector Serial". */
    public static String describeRunning() {
        return "max heap " + Runtime.getRuntime().maxMemory() / (1024 * 1024) + " MiB, max direct memory "
                + PlatformDependent.maxDirectMemory() / (1024 * 1024) + " MiB, collector " + collector();
    }

    /** The collector's name as the flags say it (Serial, G1, Parallel, ...), from its MXBeans' names. */
    static String collector() {
        List<String> names = ManagementFactory.getGarbageCollectorMXBeans().stream()
                .map(GarbageCollectorMXBean::getName).toList();
        if (names.contains("Copy") || names.contains("MarkSweepCompact")) {
            return "Serial";
        }
        if (names.stream().anyMatch(n -> n.startsWith("G1 "))) {
            return "G1";
        }
        if (names.contains("PS Scavenge") || names.contains("PS MarkSweep")) {
            return "Parallel";
        }
        return names.stream().map(n -> n.split(" ")[0]).distinct().collect(Collectors.joining("/"));
    }
}
