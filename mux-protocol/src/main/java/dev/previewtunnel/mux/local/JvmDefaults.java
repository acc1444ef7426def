package dev.previewtunnel.mux.local;

import com.sun.management.HotSpotDiagnosticMXBean;
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
 * direct memory bounded on its own (its default is -Xmx, too small for the gateway's queues, finding 3). The
 * desktop side also runs C1 only ({@link #INGRESS_COMPILER_OPTIONS}).
 */
public final class JvmDefaults {
    /**
     * The memory options, one string so that javac inlines it where the classes are only on the compile class
     * path (the benchmark runner).
     */
    public static final String MEMORY_OPTIONS = "-XX:+UseSerialGC -Xms16m -Xmx64m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=20 -XX:MaxDirectMemorySize=256m -XX:TrimNativeHeapInterval=1000";
    /**
     * The desktop side's compiler: C1 only. The ingress's work per byte is small once masking is cheap under C1
     * (finding 35), and C2 cost it more than it gave back: 13 MiB of compiler arenas and more code under the
     * 1,000-stream figure (132 against 95 MiB peak RSS), and C2's compilations were most of a fresh ingress's CPU per
     * stream open and page load (docs/performance.md, finding 36). The gateway keeps tiered compilation: its
     * unmasking is Netty's decoder, which wants C2.
     */
    public static final String INGRESS_COMPILER_OPTIONS = "-XX:TieredStopAtLevel=1";
    /** The options of {@code env-gateway serve}: {@link FatalErrors#JVM_FLAGS} and {@link #MEMORY_OPTIONS}. */
    public static final List<String> GATEWAY_FLAGS = Stream.concat(FatalErrors.JVM_FLAGS.stream(),
            Stream.of(MEMORY_OPTIONS.split(" "))).toList();
    /** The options of {@code desktop-ingress run} and {@code open}: {@link #GATEWAY_FLAGS}' and C1 only. */
    public static final List<String> INGRESS_FLAGS = Stream.concat(GATEWAY_FLAGS.stream(),
            Stream.of(INGRESS_COMPILER_OPTIONS.split(" "))).toList();
    /** Options the package launchers append last (so an -Xmx there wins over the defaults'). */
    public static final String OPTIONS_ENV = "PREVIEW_TUNNEL_JAVA_OPTIONS";

    private JvmDefaults() {
    }

    /**
     * This JVM's limits, for doctor and status: "max heap 64 MiB, max direct memory 256 MiB, collector Serial,
     * compiler C1 only".
     */
    public static String describeRunning() {
        return "max heap " + Runtime.getRuntime().maxMemory() / (1024 * 1024) + " MiB, max direct memory "
                + PlatformDependent.maxDirectMemory() / (1024 * 1024) + " MiB, collector " + collector()
                + ", compiler " + compiler();
    }

    /** Which JIT compilers run, from the flags that choose them: "C1 only", "C1 and C2", ... */
    static String compiler() {
        HotSpotDiagnosticMXBean hotSpot = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        if (hotSpot == null) {
            return "unknown";
        }
        try {
            // -XX:CompilationMode (JDK 14+) overrides the tiered flags below: quick-only is C1, high-only C2.
            String mode = compilationMode(hotSpot);
            if (mode.equals("quick-only")) {
                return "C1 only";
            }
            if (mode.startsWith("high-only")) {
                return "C2 only";
            }
            boolean tiered = Boolean.parseBoolean(hotSpot.getVMOption("TieredCompilation").getValue());
            int stopAt = Integer.parseInt(hotSpot.getVMOption("TieredStopAtLevel").getValue());
            return !tiered ? "C2 only" : stopAt == 0 ? "none (interpreter)" : stopAt < 4 ? "C1 only" : "C1 and C2";
        } catch (IllegalArgumentException e) { // not a HotSpot VM: no such flag
            return "unknown";
        }
    }

    private static String compilationMode(HotSpotDiagnosticMXBean hotSpot) {
        try {
            return hotSpot.getVMOption("CompilationMode").getValue();
        } catch (IllegalArgumentException e) { // a JDK before 14 has no such flag
            return "default";
        }
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
