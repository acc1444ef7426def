package dev.previewtunnel.bench;

import dev.previewtunnel.spikes.lab.LabProcess;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Peak memory of the two processes a path adds, per phase: the environment side (env-gateway, or the sshd
 * processes serving the connection) and the desktop side (desktop-ingress, or the ssh client). {@link #begin}
 * resets VmHWM; {@link #end} reads it (summed over the side's processes), the largest sampled VmRSS, and for the
 * JVMs the native-memory summary while the phase's streams are still open.
 */
final class MemWatch {
    private final LabProcess env;
    private final LabProcess desk;
    private final boolean jvm;
    private final boolean nmt;
    private long[] envPids;
    private long[] deskPids;
    private Mem.Sampler sampler;

    MemWatch(LabProcess env, LabProcess desk, boolean jvm, boolean nmt) {
        this.env = env;
        this.desk = desk;
        this.jvm = jvm;
        this.nmt = nmt;
    }

    /** sshd forks a process per connection (and a privilege-separated child): the whole tree counts. */
    private static long[] pids(LabProcess p) {
        List<Long> out = new ArrayList<>();
        out.add(p.pid());
        p.process().toHandle().descendants().forEach(h -> out.add(h.pid()));
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    void begin() {
        envPids = pids(env);
        deskPids = pids(desk);
        for (long pid : envPids) {
            Mem.resetHwm(pid);
        }
        for (long pid : deskPids) {
            Mem.resetHwm(pid);
        }
        long[] all = new long[envPids.length + deskPids.length];
        System.arraycopy(envPids, 0, all, 0, envPids.length);
        System.arraycopy(deskPids, 0, all, envPids.length, deskPids.length);
        sampler = new Mem.Sampler(100, all);
    }

    /** CPU milliseconds used so far by the environment side and the desktop side (all their processes). */
    long[] cpuMillis() {
        long[] e = pids(env);
        long[] d = pids(desk);
        long a = 0;
        long b = 0;
        for (long pid : e) {
            a += Math.max(0, Mem.cpuMillis(pid));
        }
        for (long pid : d) {
            b += Math.max(0, Mem.cpuMillis(pid));
        }
        return new long[]{a, b};
    }

    /** Current RSS of both sides in KiB (for a timeline). */
    long[] rssNow() {
        return new long[]{sum(envPids, false), sum(deskPids, false)};
    }

    Map<String, Object> end() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("envPeakRssMiB", mib(sum(envPids, true)));
        out.put("deskPeakRssMiB", mib(sum(deskPids, true)));
        long envSampled = 0;
        long deskSampled = 0;
        for (int i = 0; i < envPids.length; i++) {
            envSampled += sampler.maxKib(i);
        }
        for (int i = 0; i < deskPids.length; i++) {
            deskSampled += sampler.maxKib(envPids.length + i);
        }
        sampler.close();
        out.put("envSampledMaxRssMiB", mib(envSampled));
        out.put("deskSampledMaxRssMiB", mib(deskSampled));
        if (jvm && nmt) {
            out.put("envNmt", toMiB(Mem.nmt(env.pid())));
            out.put("deskNmt", toMiB(Mem.nmt(desk.pid())));
        }
        return out;
    }

    private static long sum(long[] pids, boolean hwm) {
        long total = 0;
        for (long pid : pids) {
            long v = hwm ? Mem.hwmKib(pid) : Mem.rssKib(pid);
            if (v > 0) {
                total += v;
            }
        }
        return total;
    }

    private static Map<String, Object> toMiB(Map<String, Long> kib) {
        Map<String, Object> out = new LinkedHashMap<>();
        kib.forEach((k, v) -> out.put(k.replace("KiB", "MiB"), k.contains("KiB") ? mib(v) : v));
        return out;
    }

    /**
     * How long a process is left alone after start before its first idle RSS is read, the same for every kind of
     * process (figure 6 and MemoryFloor): a JVM's start-up leaves malloc'ed memory of class loading and compilation
     * that it gives back within a second or two (-XX:TrimNativeHeapInterval=1000), which a reading at once would
     * count.
     */
    static final Duration IDLE_SETTLE = Duration.ofSeconds(3);

    /**
     * When the second, settled idle reading is taken, counted from the same moment as {@link #IDLE_SETTLE} (a
     * process's ready line; a pair's, once it carried one stream per target port). At 3 s both runtimes still hold
     * start-up memory they give back on their own: the JVMs here drop 0.8-12 MiB between 3 and 6 s (HotSpot's
     * pooled compiler arena chunks, freed every few seconds and then trimmed; the gateway's C2 the most), the peer's
     * Node processes ~4.5 MiB between 6 and 10 s (V8 collecting once idle, most likely). 15 s leaves a margin
     * (finding 58).
     */
    static final Duration IDLE_SETTLED = Duration.ofSeconds(15);

    /**
     * Both processes' idle readings ({@link #idleKib}) for figure 6: {envMiB, deskMiB, envSettledMiB, deskSettledMiB}.
     */
    static Map<String, Object> idleRss(LabProcess env, LabProcess desk, Config c) throws InterruptedException {
        long[][] kib = idleKib(List.of(env, desk), c.idleSettle, c.idleSettled);
        return Map.of("envMiB", mib(kib[0][0]), "deskMiB", mib(kib[0][1]), "envSettledMiB", mib(kib[1][0]),
                "deskSettledMiB", mib(kib[1][1]));
    }

    /**
     * Each process's RSS in KiB {@code settle} and {@code settled} from now ({@link #IDLE_SETTLE} and
     * {@link #IDLE_SETTLED} but in a smoke run), the same for every kind of process (figure 6 and MemoryFloor):
     * {at settle, at settled}, each in the order of {@code procs}. Fails if one has exited (its RSS would read as 0
     * and pass any target).
     */
    static long[][] idleKib(List<LabProcess> procs, Duration settle, Duration settled) throws InterruptedException {
        long start = System.nanoTime();
        long[][] kib = new long[2][procs.size()];
        sleepUntil(start, settle); // fixed settling times, not a wait for a condition
        readKib(procs, kib[0]);
        sleepUntil(start, settled);
        readKib(procs, kib[1]);
        return kib;
    }

    private static void readKib(List<LabProcess> procs, long[] into) {
        for (int i = 0; i < procs.size(); i++) {
            LabProcess p = procs.get(i);
            into[i] = p.isAlive() ? Mem.rssKib(p.pid()) : -1;
            if (into[i] <= 0) {
                throw new IllegalStateException(p.name() + " exited before its idle RSS was read: " + p.tail(2000));
            }
        }
    }

    /** Sleeps until {@code after} has passed since {@code startNanos} (at once if it has). */
    private static void sleepUntil(long startNanos, Duration after) throws InterruptedException {
        long left = after.toNanos() - (System.nanoTime() - startNanos);
        if (left > 0) {
            Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
        }
    }

    static double mib(long kib) {
        return Math.round(kib / 1024.0 * 10) / 10.0;
    }
}
