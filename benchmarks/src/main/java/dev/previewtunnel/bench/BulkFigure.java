package dev.previewtunnel.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.LinkedHashMap;
import java.util.Map;

/** Figure 1: bulk throughput each way over one stream, blocking NIO on the runner's thread. */
final class BulkFigure {
    private BulkFigure() {
    }

    private static final int IO_BUFFER = 1 << 20;

    /**
     * Warm-up first, bounded in time rather than bytes: a JVM on either end of the tunnel keeps compiling for
     * 10-15 s of transfer (C2 was 35-40% of each process's CPU in a 30 s profile), which a long-running gateway
     * pays once. The first warm-up transfer each way is reported as the cold figure, so that cost stays visible.
     */
    static Map<String, Object> measure(Route route, Config c, MemWatch mem) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        long warmStart = System.nanoTime();
        out.put("coldDownloadGbps", Stats.round(download(route, c.bulkWarmBytes, c.bulkMaxMillis), 3));
        out.put("coldUploadGbps", Stats.round(upload(route, c.bulkWarmBytes, c.bulkMaxMillis), 3));
        int warmRounds = 1;
        while (System.nanoTime() - warmStart < c.bulkWarmMillis * 1_000_000L) {
            download(route, c.bulkWarmBytes, c.bulkMaxMillis);
            upload(route, c.bulkWarmBytes, c.bulkMaxMillis);
            warmRounds++;
        }
        out.put("warmUpRounds", warmRounds);
        out.put("warmUpSeconds", Stats.round((System.nanoTime() - warmStart) / 1e9, 1));
        double[] down = new double[c.bulkReps];
        double[] up = new double[c.bulkReps];
        ProcessCpu cpu = new ProcessCpu(mem);
        long[] moved = new long[1];
        for (int i = 0; i < c.bulkReps; i++) {
            down[i] = download(route, c.bulkBytes, c.bulkMaxMillis, moved);
        }
        cpu.put(out, "cpuMsPerGiBDownload", moved[0] / (double) (1L << 30));
        ProcessCpu cpuUp = new ProcessCpu(mem);
        long downBytes = moved[0];
        for (int i = 0; i < c.bulkReps; i++) {
            up[i] = upload(route, c.bulkBytes, c.bulkMaxMillis, moved);
        }
        cpuUp.put(out, "cpuMsPerGiBUpload", (moved[0] - downBytes) / (double) (1L << 30));
        out.put("bytesPerRep", c.bulkBytes);
        out.put("downloadGbps", Stats.round(Stats.median(down), 3));
        out.put("uploadGbps", Stats.round(Stats.median(up), 3));
        out.put("downloadRunsGbps", Stats.rounded(down, 3));
        out.put("uploadRunsGbps", Stats.rounded(up, 3));
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

    /**
     * Client → target; Gbit/s from the first byte sent to the target's count coming back. A route without
     * half-close (the Dev Tunnels peer: its SshStream closes the whole channel at the client's FIN) tells the
     * target the count up front instead, and sends all of it: no early stop there.
     */
    static double upload(Route route, long bytes, long maxMillis, long[] moved) throws IOException {
        try (SocketChannel ch = route.open(0)) {
            ByteBuffer buf = ByteBuffer.allocateDirect(IO_BUFFER);
            long deadline = System.nanoTime() + maxMillis * 1_000_000L;
            long t0 = System.nanoTime();
            Route.command(ch, BenchTarget.SINK, route.halfClose ? -1 : bytes);
            long sent = 0;
            while (sent < bytes) {
                buf.clear();
                buf.limit((int) Math.min(IO_BUFFER, bytes - sent));
                sent += ch.write(buf);
                if (route.halfClose && System.nanoTime() > deadline) {
                    break;
                }
            }
            if (route.halfClose) {
                ch.shutdownOutput(); // the target answers with its count at EOF
            }
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
}
