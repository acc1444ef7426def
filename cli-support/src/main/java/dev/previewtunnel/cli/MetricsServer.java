package dev.previewtunnel.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The Prometheus scrape endpoint: {@code GET /metrics} in the text exposition format, on a loopback address only.
 * Metrics carry no secrets, but the endpoint still refuses what is not a local scraper: a request with an
 * {@code Origin} header (a web page) or a non-loopback {@code Host} (DNS rebinding) gets 403.
 */
public final class MetricsServer implements AutoCloseable {
    /** Content type of the Prometheus text format 0.0.4. */
    public static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private final HttpServer server;
    private final ExecutorService executor;

    private MetricsServer(HttpServer server, ExecutorService executor) {
        this.server = server;
        this.executor = executor;
    }

    /** A registry for {@link #start}, with JVM memory, thread, CPU and uptime meters bound. */
    public static PrometheusMeterRegistry newRegistry() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        bindJvm(registry);
        return registry;
    }

    static void bindJvm(MeterRegistry registry) {
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
    }

    /**
     * Binds {@code listen} (must be loopback) and serves {@code registry}.
     *
     * @throws IllegalArgumentException if {@code listen} is not a loopback address
     * @throws IOException              if it cannot be bound (e.g. {@link java.net.BindException})
     */
    public static MetricsServer start(InetSocketAddress listen, PrometheusMeterRegistry registry) throws IOException {
        if (listen.getAddress() == null || !listen.getAddress().isLoopbackAddress()) {
            throw new IllegalArgumentException("the metrics endpoint must listen on a loopback address");
        }
        HttpServer server = HttpServer.create(listen, 16);
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "ptun-metrics");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/", exchange -> handle(exchange, registry));
        server.start();
        return new MetricsServer(server, executor);
    }

    /**
     * {@link #start} for a command's {@code --metrics-listen}: a failure to bind is an exit-2 error naming the
     * address and the option.
     */
    public static MetricsServer startForCommand(InetSocketAddress listen, PrometheusMeterRegistry registry) {
        try {
            return start(listen, registry);
        } catch (IOException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "cannot listen on " + Cli.hostPort(listen)
                    + " (--metrics-listen): "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
    }

    private static void handle(HttpExchange exchange, PrometheusMeterRegistry registry) throws IOException {
        try (exchange) {
            String path = exchange.getRequestURI().getPath();
            String method = exchange.getRequestMethod().toUpperCase(Locale.ROOT);
            if (exchange.getRequestHeaders().containsKey("Origin")
                    || !loopbackHost(exchange.getRequestHeaders().getFirst("Host"))) {
                send(exchange, 403, "text/plain; charset=utf-8", "metrics are for local scrapers only\n", true);
            } else if (!"/metrics".equals(path)) {
                send(exchange, 404, "text/plain; charset=utf-8", "not found: the endpoint is /metrics\n", true);
            } else if (!"GET".equals(method) && !"HEAD".equals(method)) {
                exchange.getResponseHeaders().set("Allow", "GET, HEAD");
                send(exchange, 405, "text/plain; charset=utf-8", "method not allowed\n", true);
            } else {
                send(exchange, 200, CONTENT_TYPE, registry.scrape(), !"HEAD".equals(method));
            }
        }
    }

    private static void send(HttpExchange exchange, int status, String type, String body, boolean withBody)
            throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", type);
        exchange.getResponseHeaders().set("Cache-Control", "no-store");
        exchange.sendResponseHeaders(status, withBody ? bytes.length : -1);
        if (withBody) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
    }

    /** {@code localhost}, {@code 127.x.y.z} or {@code [::1]}, with or without a port; no DNS. */
    static boolean loopbackHost(String host) {
        if (host == null || host.isBlank()) {
            return false;
        }
        String h = host.strip();
        if (h.startsWith("[")) {
            int close = h.indexOf(']');
            h = close > 0 ? h.substring(1, close) : h;
        } else if (h.indexOf(':') > 0 && h.indexOf(':') == h.lastIndexOf(':')) {
            h = h.substring(0, h.indexOf(':'));
        }
        if ("localhost".equalsIgnoreCase(h)) {
            return true;
        }
        try {
            InetAddress literal = ListenAddress.literal(h);
            return literal != null && literal.isLoopbackAddress();
        } catch (RuntimeException e) {
            return false;
        }
    }

    public InetSocketAddress address() {
        return server.getAddress();
    }

    /** {@code http://127.0.0.1:PORT/metrics}. */
    public String url() {
        return "http://" + ListenAddress.format(address()) + "/metrics";
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
