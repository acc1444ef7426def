package dev.previewtunnel.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * The measurements, each against one {@link Route}. Single-stream figures (1-3) use blocking NIO sockets on the
 * runner's thread; many-stream figures (4, 5) use {@link AsyncClient}. Results are plain maps (they become the
 * JSON file and the table).
 */
final class Figures {
    private static final int IO_BUFFER = 1 << 20;

    private Figures() {
    }

    // ------------------------------------------------------------------------------------------ 1. bulk

    /**
     * CPU the path's own processes (gateway + ingress, or sshd + ssh) spend per unit of work, measured after the
     * warm-up: unlike times, it hardly depends on what else the machine is doing.
     */
    static final class Cpu {
        private final MemWatch mem;
        private final long[] start;

        Cpu(MemWatch mem) {
            this.mem = mem;
            this.start = mem == null ? null : mem.cpuMillis();
        }

        void put(Map<String, Object> out, String key, double units) {
            if (mem == null) {
                return;
            }
            long[] end = mem.cpuMillis();
            Map<String, Object> cpu = new LinkedHashMap<>();
            cpu.put("env", round((end[0] - start[0]) / units, 1));
            cpu.put("desk", round((end[1] - start[1]) / units, 1));
            cpu.put("sum", round((end[0] - start[0] + end[1] - start[1]) / units, 1));
            out.put(key, cpu);
        }
    }

    /**
     * Warm-up first, bounded in time rather than bytes: a JVM on either end of the tunnel keeps compiling for
     * 10-15 s of transfer (C2 was 35-40% of each process's CPU in a 30 s profile), which a long-running gateway
     * pays once. The first warm-up transfer each way is reported as the cold figure, so that cost stays visible.
     */
    static Map<String, Object> bulk(Route route, Config c, MemWatch mem) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        long warmStart = System.nanoTime();
        out.put("coldDownloadGbps", round(download(route, c.bulkWarmBytes, c.bulkMaxMillis), 3));
        out.put("coldUploadGbps", round(upload(route, c.bulkWarmBytes, c.bulkMaxMillis), 3));
        int warmRounds = 1;
        while (System.nanoTime() - warmStart < c.bulkWarmMillis * 1_000_000L) {
            download(route, c.bulkWarmBytes, c.bulkMaxMillis);
            upload(route, c.bulkWarmBytes, c.bulkMaxMillis);
            warmRounds++;
        }
        out.put("warmUpRounds", warmRounds);
        out.put("warmUpSeconds", round((System.nanoTime() - warmStart) / 1e9, 1));
        double[] down = new double[c.bulkReps];
        double[] up = new double[c.bulkReps];
        Cpu cpu = new Cpu(mem);
        long[] moved = new long[1];
        for (int i = 0; i < c.bulkReps; i++) {
            down[i] = download(route, c.bulkBytes, c.bulkMaxMillis, moved);
        }
        cpu.put(out, "cpuMsPerGiBDownload", moved[0] / (double) (1L << 30));
        Cpu cpuUp = new Cpu(mem);
        long downBytes = moved[0];
        for (int i = 0; i < c.bulkReps; i++) {
            up[i] = upload(route, c.bulkBytes, c.bulkMaxMillis, moved);
        }
        cpuUp.put(out, "cpuMsPerGiBUpload", (moved[0] - downBytes) / (double) (1L << 30));
        out.put("bytesPerRep", c.bulkBytes);
        out.put("downloadGbps", round(Stats.median(down), 3));
        out.put("uploadGbps", round(Stats.median(up), 3));
        out.put("downloadRunsGbps", rounded(down, 3));
        out.put("uploadRunsGbps", rounded(up, 3));
        return out;
    }

    /** Target → client; Gbit/s from the command to the last byte. Stops early (closing the stream) past maxMillis. */
    static double download(Route route, long bytes, long maxMillis) throws IOException {
        return download(route, bytes, maxMillis, new long[1]);
    }

    static double upload(Route route, long bytes, long maxMillis) throws IOException {
        return upload(route, bytes, maxMillis, new long[1]);
    }

    /** As above; adds the bytes moved to {@code moved[0]}. */
    static double download(Route route, long bytes, long maxMillis, long[] moved) throws IOException {
        try (SocketChannel ch = route.open(0)) {
            ByteBuffer buf = ByteBuffer.allocateDirect(IO_BUFFER);
            long deadline = System.nanoTime() + maxMillis * 1_000_000L;
            long t0 = System.nanoTime();
            Route.command(ch, BenchTarget.SOURCE, bytes);
            long got = 0;
            while (got < bytes) {
                buf.clear();
                int n = ch.read(buf);
                if (n < 0) {
                    throw new IOException("download ended after " + got + " of " + bytes + " bytes");
                }
                got += n;
                if (System.nanoTime() > deadline) {
                    break;
                }
            }
            double gbps = got * 8.0 / (System.nanoTime() - t0);
            moved[0] += got;
            if (got < bytes) {
                Route.finish(ch);
            }
            return gbps;
        }
    }

    /** Client → target; Gbit/s from the first byte sent to the target's count coming back. */
    static double upload(Route route, long bytes, long maxMillis, long[] moved) throws IOException {
        try (SocketChannel ch = route.open(0)) {
            ByteBuffer buf = ByteBuffer.allocateDirect(IO_BUFFER);
            long deadline = System.nanoTime() + maxMillis * 1_000_000L;
            long t0 = System.nanoTime();
            Route.command(ch, BenchTarget.SINK, -1);
            long sent = 0;
            while (sent < bytes) {
                buf.clear();
                buf.limit((int) Math.min(IO_BUFFER, bytes - sent));
                sent += ch.write(buf);
                if (System.nanoTime() > deadline) {
                    break;
                }
            }
            ch.shutdownOutput(); // the target answers with its count at EOF
            ByteBuffer ack = ByteBuffer.allocate(8);
            Route.readFully(ch, ack);
            long counted = ack.flip().getLong();
            if (counted != sent) {
                throw new IOException("target counted " + counted + " of " + sent + " bytes");
            }
            moved[0] += sent;
            return sent * 8.0 / (System.nanoTime() - t0);
        }
    }

    // ------------------------------------------------------------------------------------------ 2. ping-pong

    static Map<String, Object> pingPong(Route route, Config c, MemWatch mem) throws IOException {
        try (SocketChannel ch = route.open(0)) {
            Route.command(ch, BenchTarget.ECHO, 0);
            pingPong(ch, c.pingWarm, 0, Long.MAX_VALUE);
            Cpu cpu = new Cpu(mem);
            long[] rtt = pingPong(ch, 0, c.pingCount, Long.MAX_VALUE);
            Map<String, Object> out = new LinkedHashMap<>();
            cpu.put(out, "cpuUsPerRoundTrip", rtt.length / 1000.0);
            out.put("count", rtt.length);
            out.put("p50us", round(Stats.percentile(rtt, 50) / 1e3, 1));
            out.put("p90us", round(Stats.percentile(rtt, 90) / 1e3, 1));
            out.put("p99us", round(Stats.percentile(rtt, 99) / 1e3, 1));
            out.put("maxUs", round(Stats.percentile(rtt, 100) / 1e3, 1));
            return out;
        }
    }

    /** Round trips of 64 bytes in nanoseconds: {@code warm} discarded, then up to {@code count} or until the deadline. */
    static long[] pingPong(SocketChannel ch, int warm, int count, long deadlineNanos) throws IOException {
        ByteBuffer out = ByteBuffer.allocateDirect(64);
        ByteBuffer in = ByteBuffer.allocateDirect(64);
        long[] rtt = new long[count];
        int n = 0;
        for (int i = 0; i < warm + count; i++) {
            out.clear();
            in.clear();
            long t0 = System.nanoTime();
            Route.writeFully(ch, out);
            Route.readFully(ch, in);
            long t1 = System.nanoTime();
            if (i >= warm) {
                rtt[n++] = t1 - t0;
                if (t1 > deadlineNanos) {
                    break;
                }
            }
        }
        return n == count ? rtt : java.util.Arrays.copyOf(rtt, n);
    }

    // ------------------------------------------------------------------------------------------ 3. stream open

    /**
     * From the start of the TCP connect to the proxy (or the forwarded port, or the target) to the target's first
     * byte, through CONNECT and its 200 for the tunnel. One stream at a time, a short pause between them.
     */
    static Map<String, Object> streamOpen(Route route, Config c, MemWatch mem) throws IOException {
        // Warm-up and measurement are each bounded in time too (ssh -L takes ~40 ms per open: see the docs).
        long warmEnd = System.nanoTime() + c.openWarmMaxMillis * 1_000_000L;
        for (int i = 0; i < c.openWarm && System.nanoTime() < warmEnd; i++) {
            route.open(i).close();
            LockSupport.parkNanos(c.openPauseMillis * 1_000_000L);
        }
        long[] t = new long[c.openCount];
        Cpu cpu = new Cpu(mem);
        long end = System.nanoTime() + c.openMaxMillis * 1_000_000L;
        int n = 0;
        while (n < c.openCount && (n < 50 || System.nanoTime() < end)) {
            long t0 = System.nanoTime();
            SocketChannel ch = route.open(n);
            long t1 = System.nanoTime();
            ch.close();
            t[n++] = t1 - t0;
            LockSupport.parkNanos(c.openPauseMillis * 1_000_000L);
        }
        t = java.util.Arrays.copyOf(t, n);
        Map<String, Object> out = new LinkedHashMap<>();
        cpu.put(out, "cpuUsPerOpen", n / 1000.0);
        out.put("count", t.length);
        out.put("p50ms", round(Stats.percentile(t, 50) / 1e6, 3));
        out.put("p90ms", round(Stats.percentile(t, 90) / 1e6, 3));
        out.put("p99ms", round(Stats.percentile(t, 99) / 1e6, 3));
        out.put("maxMs", round(Stats.percentile(t, 100) / 1e6, 3));
        return out;
    }

    // ------------------------------------------------------------------------------------------ 4. many streams

    static Map<String, Object> concurrent(Route route, Config c, MemWatch mem) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        if (mem != null) {
            mem.begin();
        }
        try (AsyncClient client = new AsyncClient(2); Mem.TcpMemSampler kernel = new Mem.TcpMemSampler()) {
            long t0 = System.nanoTime();
            List<AsyncClient.Stream> streams = client.openAll(route, c.streams, c.streamsInFlight, 120_000);
            out.put("streams", streams.size());
            out.put("openAllSeconds", round((System.nanoTime() - t0) / 1e9, 2));
            try {
                streams.forEach(s -> s.command(BenchTarget.SOURCE_SMALL_BUFFER, -1, false));
                Lab.sleep(c.streamsWarmMillis);
                Window w = Window.measure(streams, c.streamsWindowMillis);
                double[] mbps = w.perStreamMbps();
                out.put("aggregateGbps", round(Stats.sum(mbps) / 1e3, 3));
                out.put("perStreamMinMbps", round(Stats.min(mbps), 2));
                out.put("perStreamMedianMbps", round(Stats.median(mbps), 2));
                out.put("perStreamMaxMbps", round(Stats.max(mbps), 2));
                out.put("starvedStreams", java.util.Arrays.stream(mbps).filter(v -> v == 0).count());
                out.put("endedEarly", streams.stream().filter(s -> s.ended).count());
                out.putAll(kernel.result());
                if (mem != null) {
                    out.put("memory", mem.end());
                }
            } finally {
                AsyncClient.closeAll(streams, route.proxied());
            }
        }
        return out;
    }

    /** Bytes each stream received in a window of wall time. */
    record Window(long[] bytes, long nanos) {
        static Window measure(List<AsyncClient.Stream> streams, long millis) {
            long[] a = new long[streams.size()];
            long t1 = System.nanoTime();
            for (int i = 0; i < a.length; i++) {
                a[i] = streams.get(i).received;
            }
            Lab.sleep(millis);
            long[] b = new long[streams.size()];
            long t2 = System.nanoTime();
            for (int i = 0; i < b.length; i++) {
                b[i] = streams.get(i).received - a[i];
            }
            return new Window(b, t2 - t1);
        }

        double[] perStreamMbps() {
            double[] out = new double[bytes.length];
            for (int i = 0; i < out.length; i++) {
                out[i] = bytes[i] * 8.0 / nanos * 1e3;
            }
            return out;
        }
    }

    // ------------------------------------------------------------------------------------------ 5. head-of-line

    static Map<String, Object> headOfLine(Route route, Config c, MemWatch mem) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        if (mem != null) {
            mem.begin();
        }
        Map<String, Object> base = holRun(route, c, false);
        Map<String, Object> stalled = holRun(route, c, true);
        if (mem != null) {
            out.put("memory", mem.end()); // covers both runs; the stalled run's streams were still open
        }
        out.put("baseline", base);
        out.put("stalled", stalled);
        double g0 = (double) base.get("aggregateGbps");
        double g1 = (double) stalled.get("aggregateGbps");
        out.put("throughputChangePct", round((g1 - g0) / g0 * 100, 1));
        out.put("pingP99Ratio", round((double) stalled.get("pingP99us") / (double) base.get("pingP99us"), 2));
        out.put("pingP50Ratio", round((double) stalled.get("pingP50us") / (double) base.get("pingP50us"), 2));
        return out;
    }

    /**
     * {@code holStreams} streams downloading as fast as they can, one stream doing 64-byte ping-pong, and, with
     * {@code stall}, one more stream (opened first) whose reader stopped right after asking for an endless download.
     */
    private static Map<String, Object> holRun(Route route, Config c, boolean stall) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        try (AsyncClient client = new AsyncClient(2); Mem.TcpMemSampler kernel = new Mem.TcpMemSampler()) {
            List<AsyncClient.Stream> all = new ArrayList<>();
            try {
                if (stall) {
                    AsyncClient.Stream s = client.openAll(route, 1, 1, 30_000).get(0);
                    all.add(s);
                    s.command(BenchTarget.SOURCE_SMALL_BUFFER, -1, true);
                }
                List<AsyncClient.Stream> bulk = client.openAll(route, c.holStreams, c.streamsInFlight, 60_000);
                all.addAll(bulk);
                try (SocketChannel pinger = route.open(1)) {
                    Route.command(pinger, BenchTarget.ECHO, 0);
                    bulk.forEach(s -> s.command(BenchTarget.SOURCE_SMALL_BUFFER, -1, false));
                    long warmEnd = System.nanoTime() + c.holWarmMillis * 1_000_000L;
                    while (System.nanoTime() < warmEnd) {
                        pingPong(pinger, 0, 1_000, warmEnd); // keep the pinger busy while warming up
                    }
                    long[] a = snapshot(bulk);
                    long t1 = System.nanoTime();
                    long[] rtt = pingPong(pinger, 0, 2_000_000, t1 + c.holWindowMillis * 1_000_000L);
                    long t2 = System.nanoTime();
                    long[] b = snapshot(bulk);
                    double[] mbps = new double[b.length];
                    for (int i = 0; i < b.length; i++) {
                        mbps[i] = (b[i] - a[i]) * 8.0 / (t2 - t1) * 1e3;
                    }
                    out.put("streams", bulk.size());
                    out.put("aggregateGbps", round(Stats.sum(mbps) / 1e3, 3));
                    out.put("perStreamMinMbps", round(Stats.min(mbps), 2));
                    out.put("perStreamMedianMbps", round(Stats.median(mbps), 2));
                    out.put("pings", rtt.length);
                    out.put("pingP50us", round(Stats.percentile(rtt, 50) / 1e3, 1));
                    out.put("pingP99us", round(Stats.percentile(rtt, 99) / 1e3, 1));
                    out.putAll(kernel.result());
                    if (stall) {
                        out.put("stalledStreamReceivedBytes", all.get(0).received);
                        out.put("stalledStreamAlive", !all.get(0).ended);
                    }
                }
            } finally {
                AsyncClient.closeAll(all, route.proxied());
            }
        }
        return out;
    }

    private static long[] snapshot(List<AsyncClient.Stream> streams) {
        long[] a = new long[streams.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = streams.get(i).received;
        }
        return a;
    }

    // ------------------------------------------------------------------------------------------ 6. slow reader

    /** One endless-source stream read at a fixed slow pace; memory of both sides watched over time. */
    static Map<String, Object> slowReader(Route route, Config c, MemWatch mem) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        mem.begin();
        List<Map<String, Object>> timeline = new ArrayList<>();
        try (SocketChannel ch = route.open(2)) {
            ByteBuffer buf = ByteBuffer.allocateDirect(64 * 1024);
            long t0 = System.nanoTime();
            long deadline = t0 + c.slowMaxMillis * 1_000_000L;
            Route.command(ch, BenchTarget.SOURCE, c.slowBytes);
            long got = 0;
            long nextSample = t0;
            while (got < c.slowBytes) {
                long now = System.nanoTime();
                if (now > deadline) {
                    break;
                }
                if (now >= nextSample) {
                    long[] rss = mem.rssNow();
                    Map<String, Object> s = new LinkedHashMap<>();
                    s.put("t", round((now - t0) / 1e9, 1));
                    s.put("bytes", got);
                    s.put("envRssMiB", MemWatch.mib(rss[0]));
                    s.put("deskRssMiB", MemWatch.mib(rss[1]));
                    timeline.add(s);
                    nextSample += 1_000_000_000L;
                }
                long due = t0 + (long) (got * 1e9 / c.slowBytesPerSecond);
                if (due > now) {
                    LockSupport.parkNanos(due - now);
                }
                buf.clear();
                int n = ch.read(buf);
                if (n < 0) {
                    break;
                }
                got += n;
            }
            long t1 = System.nanoTime();
            out.put("targetBytes", c.slowBytes);
            out.put("bytesRead", got);
            out.put("seconds", round((t1 - t0) / 1e9, 2));
            out.put("readerMiBps", round(got / 1048576.0 / ((t1 - t0) / 1e9), 1));
            out.put("memory", mem.end()); // while the stream is still open and its buffers full
            out.put("rssTimeline", timeline);
            if (got < c.slowBytes) {
                Route.finish(ch);
            }
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------ robustness probe

    /**
     * Not one of the figures: {@code abortStreams} streams downloading at full speed are all closed at once
     * (a browser navigating away from a page). Counts the tunnel connections the path lost over it ({@code lost}
     * reads a counter before and after) and checks that a new stream opens afterwards.
     */
    static Map<String, Object> abortProbe(Route route, Config c, java.util.function.LongSupplier lost)
            throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        long before = lost.getAsLong();
        // Default socket buffers and a fast reader: the streams' windows are open, DATA is in flight when they go.
        try (AsyncClient client = new AsyncClient(2, 0)) {
            List<AsyncClient.Stream> streams = client.openAll(route, c.abortStreams, c.streamsInFlight, 60_000);
            streams.forEach(s -> s.command(BenchTarget.SOURCE, -1, false));
            Lab.sleep(500);
            AsyncClient.abortAll(streams);
        }
        Lab.sleep(1_500);
        out.put("abortedStreams", c.abortStreams);
        out.put("connectionsLost", lost.getAsLong() - before);
        long t0 = System.nanoTime();
        String next = "ok";
        while (true) {
            try {
                route.open(0).close();
                break;
            } catch (IOException e) {
                if (System.nanoTime() - t0 > 20_000_000_000L) {
                    next = "failed: " + e.getMessage();
                    break;
                }
                Lab.sleep(100);
            }
        }
        out.put("nextStream", next);
        out.put("nextStreamAfterMs", round((System.nanoTime() - t0) / 1e6, 1));
        return out;
    }

    static double round(double v, int decimals) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return v;
        }
        double f = Math.pow(10, decimals);
        return Math.round(v * f) / f;
    }

    private static List<Double> rounded(double[] v, int decimals) {
        List<Double> out = new ArrayList<>();
        for (double d : v) {
            out.add(round(d, decimals));
        }
        return out;
    }
}
