package dev.previewtunnel.cli;

import dev.previewtunnel.mux.local.LocalHttpServer;
import dev.previewtunnel.mux.local.LocalHttpServer.Reply;
import dev.previewtunnel.mux.relay.Transports;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The Prometheus scrape endpoint: {@code GET /metrics} in the text exposition format, on a loopback address only.
 * Metrics carry no secrets, but the endpoint still refuses what is not a local scraper: a request with an
 * {@code Origin} header (a web page) or a non-loopback {@code Host} (DNS rebinding) gets 403.
 *
 * <p>Served by {@link LocalHttpServer} (head deadline, connection cap, one request at a time) on one event-loop
 * thread of its own; the scrape itself (Micrometer renders every meter, so its time grows with their number) runs
 * on a separate thread, never on that event loop, so one slow scrape does not stall the other connections' reads
 * and deadlines. Scrapes queue on that one thread; the request deadline also bounds how long one may wait there.
 */
public final class MetricsServer implements AutoCloseable {
    /** Content type of the Prometheus text format 0.0.4. */
    public static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private final EventLoopGroup group;
    private final Channel channel;
    private final ExecutorService scrapes;

    private MetricsServer(EventLoopGroup group, Channel channel, ExecutorService scrapes) {
        this.group = group;
        this.channel = channel;
        this.scrapes = scrapes;
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

    /** {@link #start(InetSocketAddress, PrometheusMeterRegistry, LocalHttpServer.Limits)} with the default limits. */
    public static MetricsServer start(InetSocketAddress listen, PrometheusMeterRegistry registry) throws IOException {
        return start(listen, registry, LocalHttpServer.Limits.defaults());
    }

    /**
     * Binds {@code listen} (must be loopback) and serves {@code registry} within {@code limits}.
     *
     * @throws IllegalArgumentException if {@code listen} is not a loopback address
     * @throws IOException              if it cannot be bound (e.g. {@link java.net.BindException})
     */
    public static MetricsServer start(InetSocketAddress listen, PrometheusMeterRegistry registry,
                                      LocalHttpServer.Limits limits) throws IOException {
        if (listen.getAddress() == null || !listen.getAddress().isLoopbackAddress()) {
            throw new IllegalArgumentException("the metrics endpoint must listen on a loopback address");
        }
        Transports transports = Transports.best();
        EventLoopGroup group = transports.newGroup(1, "ptun-metrics-io");
        ExecutorService scrapes = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "ptun-metrics");
            t.setDaemon(true);
            return t;
        });
        try {
            Channel channel = LocalHttpServer.bind(group, transports.serverSocketChannel(), listen, limits,
                    "metrics endpoint", request -> answer(request, registry, scrapes));
            return new MetricsServer(group, channel, scrapes);
        } catch (Throwable e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            scrapes.shutdownNow();
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while binding " + listen, e);
            }
            if (e instanceof IOException io) {
                throw io;
            }
            if (e instanceof RuntimeException r) {
                throw r;
            }
            if (e instanceof Error err) {
                throw err;
            }
            // Netty rethrows a failed bind (BindException, checked) without declaring it.
            throw new IOException(e.getMessage(), e);
        }
    }

    /**
     * {@link #start} for a command's {@code --metrics-listen}: a failure to bind is an exit-2 error naming the
     * address and the option.
     */
    public static MetricsServer startForCommand(InetSocketAddress listen, PrometheusMeterRegistry registry) {
        return startForCommand(listen, registry, LocalHttpServer.Limits.defaults());
    }

    /** As above, with the request deadline and connection cap of {@code limits}. */
    public static MetricsServer startForCommand(InetSocketAddress listen, PrometheusMeterRegistry registry,
                                                LocalHttpServer.Limits limits) {
        try {
            return start(listen, registry, limits);
        } catch (IOException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "cannot listen on " + Cli.hostPort(listen)
                    + " (--metrics-listen): "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
    }

    /** On the event loop: the checks are cheap; the scrape goes to {@code scrapes}. */
    private static CompletionStage<Reply> answer(LocalHttpServer.Request request, PrometheusMeterRegistry registry,
                                                 ExecutorService scrapes) {
        String method = request.method().toUpperCase(Locale.ROOT);
        if (request.headers().contains("Origin") || !loopbackHost(request.headers().get("Host"))) {
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
        return (InetSocketAddress) channel.localAddress();
    }

    /** {@code http://127.0.0.1:PORT/metrics}. */
    public String url() {
        return "http://" + ListenAddress.format(address()) + "/metrics";
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        scrapes.shutdownNow();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
