package dev.previewtunnel.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.LinkedHashMap;
import java.util.Map;

/** Figure 2: 64-byte round trips over one stream, blocking NIO on the runner's thread. */
final class PingPongFigure {
    private PingPongFigure() {
    }

    static Map<String, Object> measure(Route route, Config c, MemWatch mem) throws IOException {
        try (SocketChannel ch = route.open(0)) {
            Route.command(ch, BenchTarget.ECHO, 0);
            roundTrips(ch, c.pingWarm, 0, Long.MAX_VALUE);
            ProcessCpu cpu = new ProcessCpu(mem);
            long[] rtt = roundTrips(ch, 0, c.pingCount, Long.MAX_VALUE);
            Map<String, Object> out = new LinkedHashMap<>();
            cpu.put(out, "cpuUsPerRoundTrip", rtt.length / 1000.0);
            out.put("count", rtt.length);
            Stats.putPercentiles(out, rtt, 1e3, "us", 1);
            return out;
        }
    }

    /** Round trips of 64 bytes in nanoseconds: {@code warm} discarded, then up to {@code count} or until the deadline. */
    static long[] roundTrips(SocketChannel ch, int warm, int count, long deadlineNanos) throws IOException {
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
}
