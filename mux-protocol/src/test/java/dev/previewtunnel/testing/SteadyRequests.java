package dev.previewtunnel.testing;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A browser that keeps asking: one GET every {@code period}, each on its own (none waits for the one before), each
 * bounded by {@code timeout}. The fault tests read when each was sent and when and how it was answered; a request
 * that failed without an answer (reset, timeout) has status -1.
 */
public final class SteadyRequests implements AutoCloseable {
    /** One request: sent at {@code sentAt}, answered (or failed) at {@code at} ({@link System#nanoTime()} both). */
    public record Outcome(long sentAt, long at, int status) {
        public long millis() {
            return TimeUnit.NANOSECONDS.toMillis(at - sentAt);
        }
    }

    private final ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "steady-requests");
        t.setDaemon(true);
        return t;
    });
    private final List<CompletableFuture<Outcome>> sent = new ArrayList<>();

    private SteadyRequests(HttpClient client, URI uri, Duration period, Duration timeout) {
        ticker.scheduleAtFixedRate(() -> {
            long sentAt = System.nanoTime();
            CompletableFuture<Outcome> outcome = client.sendAsync(HttpRequest.newBuilder(uri).timeout(timeout).build(),
                            HttpResponse.BodyHandlers.ofString())
                    .handle((r, e) -> new Outcome(sentAt, System.nanoTime(), r == null ? -1 : r.statusCode()));
            synchronized (sent) {
                sent.add(outcome);
            }
        }, 0, period.toMillis(), TimeUnit.MILLISECONDS);
    }

    public static SteadyRequests start(HttpClient client, URI uri, Duration period, Duration timeout) {
        return new SteadyRequests(client, uri, period, timeout);
    }

    /** The requests answered (or failed) so far, in the order they were sent; the ticker goes on. */
    public List<Outcome> answered() {
        List<Outcome> out = new ArrayList<>();
        synchronized (sent) {
            for (CompletableFuture<Outcome> f : sent) {
                if (f.isDone()) {
                    out.add(f.join());
                }
            }
        }
        return out;
    }

    /** Stops sending and returns every request sent, in order, each once answered (waits at most {@code bound}). */
    public List<Outcome> stopAndCollect(Duration bound) throws Exception {
        ticker.shutdownNow();
        List<CompletableFuture<Outcome>> all;
        synchronized (sent) {
            all = new ArrayList<>(sent);
        }
        long deadline = System.nanoTime() + bound.toNanos();
        List<Outcome> out = new ArrayList<>();
        for (CompletableFuture<Outcome> f : all) {
            out.add(f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
        }
        return out;
    }

    @Override
    public void close() {
        ticker.shutdownNow();
    }
}
