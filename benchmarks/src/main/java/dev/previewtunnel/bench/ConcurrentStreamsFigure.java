package dev.previewtunnel.bench;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Figure 4: many streams downloading at once ({@link AsyncClient}); throughput per stream and memory. */
final class ConcurrentStreamsFigure {
    private ConcurrentStreamsFigure() {
    }

    static Map<String, Object> measure(Route route, Config c, MemWatch mem) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        if (mem != null) {
            mem.begin();
        }
        try (AsyncClient client = new AsyncClient(2); Mem.TcpMemSampler kernel = new Mem.TcpMemSampler()) {
            long t0 = System.nanoTime();
            List<AsyncClient.Stream> streams = client.openAll(route, c.streams, c.streamsInFlight, 120_000);
            out.put("streams", streams.size());
            out.put("openAllSeconds", Stats.round((System.nanoTime() - t0) / 1e9, 2));
            try {
                streams.forEach(s -> s.command(BenchTarget.SOURCE_SMALL_BUFFER, -1, false));
                Lab.sleep(c.streamsWarmMillis);
                Window w = Window.measure(streams, c.streamsWindowMillis);
                double[] mbps = w.perStreamMbps();
                out.put("aggregateGbps", Stats.round(Stats.sum(mbps) / 1e3, 3));
                out.put("perStreamMinMbps", Stats.round(Stats.min(mbps), 2));
                out.put("perStreamMedianMbps", Stats.round(Stats.median(mbps), 2));
                out.put("perStreamMaxMbps", Stats.round(Stats.max(mbps), 2));
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
}
