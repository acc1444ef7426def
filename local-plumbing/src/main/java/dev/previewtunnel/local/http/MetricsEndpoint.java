package dev.previewtunnel.local.http;

import dev.previewtunnel.local.http.LocalHttpServer.Reply;
import dev.previewtunnel.local.metrics.PrometheusRegistries;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * The Prometheus scrape route of a {@link LocalHttpServer}: {@code GET /metrics} in the text exposition format.
 * Metrics carry no secrets, but the route still refuses what is not a local scraper: a request with an
 * {@code Origin} header (a web page) or a non-loopback {@code Host} (DNS rebinding; the same
 * {@link LocalApi#loopbackHost} check as the control and admin APIs) gets 403.
 *
 * <p>The checks run on the event loop (they are cheap); the scrape itself (Micrometer renders every meter, so its
 * time grows with their number) runs on {@code scrapes}, never on the event loop, so one slow scrape does not
 * stall the other connections' reads and deadlines.
 */
public final class MetricsEndpoint implements LocalHttpServer.Handler {
    /** Content type of the Prometheus text format 0.0.4. */
    public static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private final PrometheusMeterRegistry registry;
    private final Executor scrapes;

    public MetricsEndpoint(PrometheusMeterRegistry registry, Executor scrapes) {
        this.registry = registry;
        this.scrapes = scrapes;
    }

    /**
     * A registry to serve, following the Prometheus naming conventions ({@link PrometheusRegistries}); the JVM and
     * process meters are bound by {@link MetricsServer#start} for as long as it serves.
     */
    public static PrometheusMeterRegistry newRegistry() {
        return PrometheusRegistries.newRegistry();
    }

    @Override
    public CompletionStage<Reply> handle(LocalHttpServer.Request request) {
        String method = request.method().toUpperCase(Locale.ROOT);
        if (request.headers().contains("Origin") || !LocalApi.loopbackHost(request.headers().get("Host"))) {
            return CompletableFuture.completedFuture(Reply.text(403, "metrics are for local scrapers only\n"));
        }
        if (!"/metrics".equals(request.path())) {
            return CompletableFuture.completedFuture(Reply.text(404, "not found: the endpoint is /metrics\n"));
        }
        if (!"GET".equals(method) && !"HEAD".equals(method)) {
            return CompletableFuture.completedFuture(new Reply(405, "text/plain; charset=utf-8",
                    "method not allowed\n".getBytes(StandardCharsets.UTF_8), Map.of("Allow", "GET, HEAD")));
        }
        try {
            return CompletableFuture.supplyAsync(() -> new Reply(200, CONTENT_TYPE,
                    registry.scrape().getBytes(StandardCharsets.UTF_8), Map.of()), scrapes);
        } catch (RejectedExecutionException e) {
            return CompletableFuture.completedFuture(Reply.text(503, "stopping\n"));
        }
    }
}
