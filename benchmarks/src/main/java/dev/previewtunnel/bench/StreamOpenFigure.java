package dev.previewtunnel.bench;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/** Figure 3: the time to open one stream, blocking NIO on the runner's thread. */
final class StreamOpenFigure {
    private StreamOpenFigure() {
    }

    /**
     * From the start of the TCP connect to the proxy (or the forwarded port, or the target) to the target's first
     * byte, through CONNECT and its 200 for the tunnel. One stream at a time, a short pause between them.
     */
    static Map<String, Object> measure(Route route, Config c, MemWatch mem) throws IOException {
        // Warm-up and measurement are each bounded in time too (ssh -L takes ~40 ms per open: see the docs).
        long warmEnd = System.nanoTime() + c.openWarmMaxMillis * 1_000_000L;
        for (int i = 0; i < c.openWarm && System.nanoTime() < warmEnd; i++) {
            route.open(i).close();
            LockSupport.parkNanos(c.openPauseMillis * 1_000_000L);
        }
        long[] t = new long[c.openCount];
        ProcessCpu cpu = new ProcessCpu(mem);
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
        Stats.putPercentiles(out, t, 1e6, "ms", 3);
        return out;
    }
}
