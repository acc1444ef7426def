package dev.previewtunnel.bench;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A robustness probe, not one of the figures: {@code abortStreams} streams downloading at full speed are all
 * closed at once (a browser navigating away from a page). Counts the tunnel connections the path lost over it
 * ({@code lost} reads a counter before and after) and checks that a new stream opens afterwards.
 */
final class AbortProbe {
    private AbortProbe() {
    }

    static Map<String, Object> run(Route route, Config c, java.util.function.LongSupplier lost)
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
        out.put("nextStreamAfterMs", Stats.round((System.nanoTime() - t0) / 1e6, 1));
        return out;
    }
}
