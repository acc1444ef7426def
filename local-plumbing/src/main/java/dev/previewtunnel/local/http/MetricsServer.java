package dev.previewtunnel.local.http;

import dev.previewtunnel.local.metrics.RuntimeMeters;
import dev.previewtunnel.local.net.ListenAddress;
import dev.previewtunnel.local.shutdown.Shutdown;
import dev.previewtunnel.mux.relay.Transports;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The {@link MetricsEndpoint} served by a {@link LocalHttpServer} (head deadline, connection cap, one request at a
 * time) on one event-loop thread of its own, with the scrapes on one separate thread: a program that serves
 * metrics starts this beside its control or admin endpoint. Scrapes queue on that one thread; the request
 * deadline also bounds how long one may wait there.
 */
public final class MetricsServer implements AutoCloseable {
    private final EventLoopGroup group;
    private final Channel channel;
    private final ExecutorService scrapes;
    private final RuntimeMeters runtime;

    private MetricsServer(EventLoopGroup group, Channel channel, ExecutorService scrapes, RuntimeMeters runtime) {
        this.group = group;
        this.channel = channel;
        this.scrapes = scrapes;
        this.runtime = runtime;
    }

    /** {@link MetricsEndpoint#newRegistry()}: the registry a program hands to {@link #start}. */
    public static PrometheusMeterRegistry newRegistry() {
        return MetricsEndpoint.newRegistry();
    }

    /** {@link #start(InetSocketAddress, PrometheusMeterRegistry, LocalHttpServer.Limits)} with the default limits. */
    public static MetricsServer start(InetSocketAddress listen, PrometheusMeterRegistry registry) throws IOException {
        return start(listen, registry, LocalHttpServer.Limits.defaults());
    }

    /**
     * Binds {@code listen} (must be loopback) and serves {@code registry} within {@code limits}, with the JVM and
     * process meters ({@link RuntimeMeters}) bound to it until {@link #close()}.
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
                    "metrics endpoint", new MetricsEndpoint(registry, scrapes));
            return new MetricsServer(group, channel, scrapes, RuntimeMeters.bindTo(registry));
        } catch (Throwable e) {
            Shutdown.begin(group);
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

    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    /** {@code http://127.0.0.1:PORT/metrics}. */
    public String url() {
        return "http://" + ListenAddress.format(address()) + "/metrics";
    }

    @Override
    public void close() {
        Shutdown.close(channel);
        scrapes.shutdownNow();
        Shutdown.andWait(group);
        runtime.close();
    }
}
