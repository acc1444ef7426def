package dev.previewtunnel.bench;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Figure 5: what one stalled reader does to the other streams of its tunnel ({@link AsyncClient}). */
final class HeadOfLineFigure {
    private HeadOfLineFigure() {
    }

    static Map<String, Object> measure(Route route, Config c, MemWatch mem) throws IOException {
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
        out.put("throughputChangePct", Stats.round((g1 - g0) / g0 * 100, 1));
        out.put("pingP99Ratio", Stats.round((double) stalled.get("pingP99us") / (double) base.get("pingP99us"), 2));
        out.put("pingP50Ratio", Stats.round((double) stalled.get("pingP50us") / (double) base.get("pingP50us"), 2));
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
                        PingPongFigure.roundTrips(pinger, 0, 1_000, warmEnd); // keep the pinger busy while warming up
                    }
                    long[] a = snapshot(bulk);
                    long t1 = System.nanoTime();
                    long[] rtt = PingPongFigure.roundTrips(pinger, 0, 2_000_000, t1 + c.holWindowMillis * 1_000_000L);
                    long t2 = System.nanoTime();
                    long[] b = snapshot(bulk);
                    double[] mbps = new double[b.length];
                    for (int i = 0; i < b.length; i++) {
                        mbps[i] = (b[i] - a[i]) * 8.0 / (t2 - t1) * 1e3;
                    }
                    out.put("streams", bulk.size());
                    out.put("aggregateGbps", Stats.round(Stats.sum(mbps) / 1e3, 3));
                    out.put("perStreamMinMbps", Stats.round(Stats.min(mbps), 2));
                    out.put("perStreamMedianMbps", Stats.round(Stats.median(mbps), 2));
                    out.put("pings", rtt.length);
                    out.put("pingP50us", Stats.round(Stats.percentile(rtt, 50) / 1e3, 1));
                    out.put("pingP99us", Stats.round(Stats.percentile(rtt, 99) / 1e3, 1));
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
}
