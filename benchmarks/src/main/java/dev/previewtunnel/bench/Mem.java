package dev.previewtunnel.bench;

import dev.previewtunnel.spikes.lab.Processes;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Memory of a child process, from Linux and from the JVM's native memory tracking.
 *
 * <ul>
 *   <li>{@link #hwmKib}: {@code VmHWM} of {@code /proc/PID/status}, the peak resident set;
 *       {@link #resetHwm} writes 5 to {@code /proc/PID/clear_refs}, which resets it (Linux >= 4.0), so each
 *       phase gets its own peak;</li>
 *   <li>{@link #nmt}: {@code jcmd PID VM.native_memory summary} (the JVM runs with
 *       {@code -XX:NativeMemoryTracking=summary}): heap committed, and the "Other" category, where direct
 *       buffers live (JDK {@code ByteBuffer.allocateDirect} and Netty's cleaner-less direct buffers are both
 *       {@code Unsafe.allocateMemory}), current and peak since the JVM started.</li>
 * </ul>
 */
final class Mem {
    private static final Pattern TOTAL = Pattern.compile("Total: reserved=(\\d+)KB, committed=(\\d+)KB");
    private static final Pattern OTHER = Pattern.compile(
            "- +Other \\(reserved=(\\d+)KB, committed=(\\d+)KB\\)\\s*\\n\\s*\\(malloc=(\\d+)KB #\\d+\\)\\s*"
                    + "(?:\\(peak=(\\d+)KB #\\d+\\)|\\(at peak\\))?");
    private static final Pattern HEAP = Pattern.compile("- +Java Heap \\(reserved=(\\d+)KB, committed=(\\d+)KB\\)");
    /** Every category's committed memory ("-  Code (reserved=..KB, committed=..KB)"), for the per-category tables. */
    private static final Pattern CATEGORY = Pattern.compile(
            "(?m)^- +([A-Za-z][A-Za-z ]*?) \\(reserved=\\d+KB, committed=(\\d+)KB\\)");
    private static final Pattern THREADS = Pattern.compile("\\(thread #(\\d+)\\)");

    private Mem() {
    }

    static long hwmKib(long pid) {
        return statusField(pid, "VmHWM:");
    }

    static long rssKib(long pid) {
        return statusField(pid, "VmRSS:");
    }

    static boolean resetHwm(long pid) {
        try {
            Files.writeString(Path.of("/proc/" + pid + "/clear_refs"), "5");
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static long statusField(long pid, String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"), StandardCharsets.UTF_8)) {
                if (line.startsWith(field)) {
                    return Long.parseLong(line.substring(field.length()).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // process gone
        }
        return -1;
    }

    /** Native memory summary in KiB: committed, heapCommitted, directNow (Other malloc), directPeak; empty on failure. */
    static Map<String, Long> nmt(long pid) {
        Map<String, Long> out = new LinkedHashMap<>();
        String text;
        try {
            text = Processes.runOk(List.of("jcmd", String.valueOf(pid), "VM.native_memory", "summary"), null,
                    Duration.ofSeconds(30)).output();
        } catch (RuntimeException e) {
            return out;
        }
        // plus "committed CATEGORY KiB" for every category and "threads" (NMT's thread count)
        Matcher t = TOTAL.matcher(text);
        if (t.find()) {
            out.put("committedKiB", Long.parseLong(t.group(2)));
        }
        Matcher h = HEAP.matcher(text);
        if (h.find()) {
            out.put("heapCommittedKiB", Long.parseLong(h.group(2)));
        }
        Matcher o = OTHER.matcher(text);
        if (o.find()) {
            long now = Long.parseLong(o.group(3));
            out.put("directNowKiB", now);
            out.put("directPeakKiB", o.group(4) == null ? now : Long.parseLong(o.group(4)));
        }
        Matcher c = CATEGORY.matcher(text);
        while (c.find()) {
            out.put("committed " + c.group(1) + " KiB", Long.parseLong(c.group(2)));
        }
        Matcher th = THREADS.matcher(text);
        if (th.find()) {
            out.put("threads", Long.parseLong(th.group(1)));
        }
        return out;
    }

    /** CPU time (user + system) of a process so far, in milliseconds, from /proc/PID/stat; -1 if gone. */
    static long cpuMillis(long pid) {
        try {
            String stat = Files.readAllLines(Path.of("/proc/" + pid + "/stat")).get(0);
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime (fields 14 and 15)
            return ticks * 10; // USER_HZ is 100 on Linux
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Pages of kernel memory in TCP buffers ("TCP: ... mem N" of /proc/net/sockstat), or -1. */
    static long tcpMemPages() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/net/sockstat"))) {
                if (line.startsWith("TCP:")) {
                    String[] f = line.trim().split("\\s+");
                    for (int i = 1; i + 1 < f.length; i++) {
                        if (f[i].equals("mem")) {
                            return Long.parseLong(f[i + 1]);
                        }
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return -1;
    }

    /** net.ipv4.tcp_mem's pressure threshold in pages (the middle value), or -1. */
    static long tcpMemPressurePages() {
        try {
            String[] f = Files.readAllLines(Path.of("/proc/sys/net/ipv4/tcp_mem")).get(0).trim().split("\\s+");
            return Long.parseLong(f[1]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Largest kernel TCP buffer memory seen while open (sampled every 100 ms). */
    static final class TcpMemSampler implements AutoCloseable {
        private final Thread thread;
        private volatile boolean running = true;
        private volatile long maxPages;

        TcpMemSampler() {
            thread = new Thread(() -> {
                while (running) {
                    maxPages = Math.max(maxPages, tcpMemPages());
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "bench-tcpmem-sampler");
            thread.setDaemon(true);
            thread.start();
        }

        /** Peak MiB and whether it crossed tcp_mem's pressure mark (then streams may starve in the kernel). */
        Map<String, Object> result() {
            Map<String, Object> out = new LinkedHashMap<>();
            long pressure = tcpMemPressurePages();
            out.put("kernelTcpMemPeakMiB", maxPages * 4 / 1024);
            out.put("kernelTcpMemPressureMiB", pressure * 4 / 1024);
            out.put("kernelTcpMemPressure", pressure > 0 && maxPages >= pressure);
            return out;
        }

        @Override
        public void close() {
            running = false;
            thread.interrupt();
        }
    }

    /** Samples VmRSS of some processes every {@code periodMillis} on a daemon thread, keeping the maximum. */
    static final class Sampler implements AutoCloseable {
        private final long[] pids;
        private final long[] maxKib;
        private final Thread thread;
        private volatile boolean running = true;

        Sampler(long periodMillis, long... pids) {
            this.pids = pids;
            this.maxKib = new long[pids.length];
            thread = new Thread(() -> {
                while (running) {
                    for (int i = 0; i < pids.length; i++) {
                        long rss = rssKib(pids[i]);
                        synchronized (this) {
                            maxKib[i] = Math.max(maxKib[i], rss);
                        }
                    }
                    try {
                        Thread.sleep(periodMillis);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "bench-rss-sampler");
            thread.setDaemon(true);
            thread.start();
        }

        synchronized long maxKib(int index) {
            return maxKib[index];
        }

        @Override
        public void close() {
            running = false;
            thread.interrupt();
        }
    }
}
