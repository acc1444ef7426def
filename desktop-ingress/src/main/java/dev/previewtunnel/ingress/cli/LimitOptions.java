package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.ingress.BrowserConnectionLimits;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.mux.local.LocalHttpServer;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The limits and timeouts of {@code run}, each a flag, a {@code PTUN_INGRESS_*} variable and a config-file key
 * with the default of {@link IngressConfig#defaults} and {@link MuxSettings#defaults()}. The browser side is bounded
 * by the request-head size and deadline; the tunnel side by what the ingress accepts from the gateway (stream
 * window, WebSocket message size) and how quickly it notices a dead gateway (keepalive, timeouts).
 *
 * <p>The defaults in the descriptions are literals (annotations need constants); {@code RunLimitsTest} checks
 * them against the default objects.
 */
final class LimitOptions {
    static final String REQUEST_HEAD_TIMEOUT = "request-head-timeout";
    static final String MAX_REQUEST_HEADERS = "max-request-headers";
    static final String CONNECT_TIMEOUT = "connect-timeout";
    static final String OPEN_TIMEOUT = "open-timeout";
    static final String STREAM_WINDOW = "stream-window";
    static final String WEBSOCKET_MESSAGE = "max-websocket-message";
    static final String KEEPALIVE_INTERVAL = "keepalive-interval";
    static final String KEEPALIVE_TIMEOUT = "keepalive-timeout";
    static final String BROWSER_CONNECTIONS = "max-browser-connections";
    static final String UNAUTHENTICATED_CONNECTIONS = "max-unauthenticated-connections";
    static final String UNAUTHENTICATED_TIMEOUT = "unauthenticated-timeout";
    static final String BODY_IDLE_TIMEOUT = "request-body-idle-timeout";
    static final String LOCAL_REQUEST_TIMEOUT = "local-request-timeout";
    static final String LOCAL_CONNECTIONS = "max-local-connections";
    static final String WRITE_BACKLOG = "max-write-backlog";

    /** Every key, for the config file's list of known keys. */
    static final List<String> KEYS = List.of(REQUEST_HEAD_TIMEOUT, MAX_REQUEST_HEADERS, CONNECT_TIMEOUT,
            OPEN_TIMEOUT, STREAM_WINDOW, WEBSOCKET_MESSAGE, KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT, BROWSER_CONNECTIONS,
            UNAUTHENTICATED_CONNECTIONS, UNAUTHENTICATED_TIMEOUT, BODY_IDLE_TIMEOUT, LOCAL_REQUEST_TIMEOUT,
            LOCAL_CONNECTIONS, WRITE_BACKLOG);

    @Option(names = "--" + REQUEST_HEAD_TIMEOUT, paramLabel = "DURATION",
            converter = Converters.DurationConverter.class,
            description = "A browser connection must send each request head within this after the previous "
                    + "exchange (slowloris; also ends idle keep-alive connections); 1s to 1h (default: 30s).")
    Duration requestHeadTimeout;

    @Option(names = "--" + MAX_REQUEST_HEADERS, paramLabel = "SIZE", converter = Converters.SizeConverter.class,
            description = "Largest header block of a browser request; bigger ones get a 400 bad_request page; "
                    + "4KiB to 1MiB (default: 16KiB).")
    Long maxRequestHeaders;

    @Option(names = "--" + CONNECT_TIMEOUT, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "TCP connect plus WebSocket upgrade of one tunnel connection (and a direct-egress "
                    + "connect); 1s to 10m (default: 5s).")
    Duration connectTimeout;

    @Option(names = "--" + OPEN_TIMEOUT, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "How long the gateway may take to answer a stream open, its dial included, before the "
                    + "browser gets a 504 gateway_timeout page; 1s to 10m (default: 10s).")
    Duration openTimeout;

    @Option(names = "--" + STREAM_WINDOW, paramLabel = "SIZE", converter = Converters.SizeConverter.class,
            description = "HTTP/2 receive window of each stream: the most the gateway may send ahead of a slow "
                    + "browser, and (divided by the round-trip time) a download's throughput cap; 64KiB to "
                    + "1GiB (default: 1MiB).")
    Long streamWindow;

    @Option(names = "--" + WEBSOCKET_MESSAGE, paramLabel = "SIZE", converter = Converters.SizeConverter.class,
            description = "Largest WebSocket message accepted from the gateway, which sends at most 16KiB; "
                    + "16KiB to 64MiB (default: 256KiB).")
    Long webSocketMessage;

    @Option(names = "--" + KEEPALIVE_INTERVAL, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "Send an HTTP/2 PING on a tunnel connection after this long without receiving anything "
                    + "from the gateway (at most 3/4 of --keepalive-timeout); 1s to 1h (default: 15s).")
    Duration keepaliveInterval;

    @Option(names = "--" + KEEPALIVE_TIMEOUT, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "Drop a tunnel connection (and reconnect) when nothing, not even a PING answer, has been "
                    + "received from the gateway for this long; 1s to 1h (default: 20s).")
    Duration keepaliveTimeout;

    @Option(names = "--" + BROWSER_CONNECTIONS, paramLabel = "N",
            description = "Browser connections open at once on the proxy port; more are closed at accept (lowered "
                    + "to what the open-files limit allows, with a warning); 16 to 1000000 (default: 4096).")
    Integer browserConnections;

    @Option(names = "--" + UNAUTHENTICATED_CONNECTIONS, paramLabel = "N",
            description = "Of those, connections that have not yet sent a request with a valid session credential; "
                    + "the rest is headroom for authenticated sessions; 1 to --" + BROWSER_CONNECTIONS
                    + " (default: 512).")
    Integer unauthenticatedConnections;

    @Option(names = "--" + UNAUTHENTICATED_TIMEOUT, paramLabel = "DURATION",
            converter = Converters.DurationConverter.class,
            description = "Close a browser connection that has not authenticated this long after accept; 1s to 10m "
                    + "(default: 10s).")
    Duration unauthenticatedTimeout;

    @Option(names = "--" + BODY_IDLE_TIMEOUT, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "While the proxy waits for a request body, each period this long must bring 1KiB or the "
                    + "body's end, else the request is cut (408 request_body_timeout); 1s to 1h (default: 30s).")
    Duration bodyIdleTimeout;

    @Option(names = "--" + LOCAL_REQUEST_TIMEOUT, paramLabel = "DURATION",
            converter = Converters.DurationConverter.class,
            description = "On the control API and metrics endpoint, a whole request (and each answer) must be done "
                    + "within this, else the connection is closed; 1s to 10m (default: 5s).")
    Duration localRequestTimeout;

    @Option(names = "--" + LOCAL_CONNECTIONS, paramLabel = "N",
            description = "Connections open at once on the control API, and on the metrics endpoint; more are "
                    + "closed at accept; 1 to 10000 (default: 64).")
    Integer localConnections;
    @Option(names = "--" + WRITE_BACKLOG, paramLabel = "SIZE", converter = Converters.SizeConverter.class,
            description = "Bytes the gateway may leave unread on a tunnel connection (answers it provoked: PONGs, PING "
                    + "ACKs) before the connection is closed and replaced; relayed data never queues that much "
                    + "(flow control); 1MiB to 1GiB (default: 64MiB).")
    Long writeBacklog;

    /** {@code base} with each setting from the flags, else the environment, else the config file, else {@code base}. */
    IngressConfig applyTo(IngressConfig base, Settings s) {
        MuxSettings m = base.mux();
        Duration headTimeout = s.inRange(REQUEST_HEAD_TIMEOUT, s.duration(REQUEST_HEAD_TIMEOUT, requestHeadTimeout,
                base.requestHeadTimeout()), Duration.ofSeconds(1), Duration.ofHours(1));
        int headers = (int) s.inRange(MAX_REQUEST_HEADERS, s.size(MAX_REQUEST_HEADERS, maxRequestHeaders,
                base.maxRequestHead()), 4 << 10, 1 << 20, true);
        Duration connect = s.inRange(CONNECT_TIMEOUT, s.duration(CONNECT_TIMEOUT, connectTimeout,
                base.connectTimeout()), Duration.ofSeconds(1), Duration.ofMinutes(10));
        Duration open = s.inRange(OPEN_TIMEOUT, s.duration(OPEN_TIMEOUT, openTimeout, base.openTimeout()),
                Duration.ofSeconds(1), Duration.ofMinutes(10));
        int window = (int) s.inRange(STREAM_WINDOW, s.size(STREAM_WINDOW, streamWindow, m.streamWindow()),
                64 << 10, 1 << 30, true);
        int message = (int) s.inRange(WEBSOCKET_MESSAGE, s.size(WEBSOCKET_MESSAGE, webSocketMessage,
                m.maxWebSocketMessage()), MuxProtocol.MAX_SENT_MESSAGE, 64 << 20, true);
        Duration pingEvery = s.inRange(KEEPALIVE_INTERVAL, s.duration(KEEPALIVE_INTERVAL, keepaliveInterval,
                m.pingInterval()), Duration.ofSeconds(1), Duration.ofHours(1));
        Duration pingWait = s.inRange(KEEPALIVE_TIMEOUT, s.duration(KEEPALIVE_TIMEOUT, keepaliveTimeout,
                m.pingTimeout()), Duration.ofSeconds(1), Duration.ofHours(1));
        long backlog = s.inRange(WRITE_BACKLOG, s.size(WRITE_BACKLOG, writeBacklog, m.maxWriteBacklog()),
                MuxSettings.MIN_WRITE_BACKLOG, 1 << 30, true);

        if (MuxSettings.connectionWindowProblem(window, m.maxConcurrentStreams()) != null) {
            // The connection window (streams x stream window) must hold every stream's window; capping it would
            // let stalled streams starve the rest, so the value is refused.
            long largest = (MuxSettings.MAX_WINDOW / m.maxConcurrentStreams()) & ~1023L;
            throw s.invalid(STREAM_WINDOW, Converters.humanSize(window) + " x the " + m.maxConcurrentStreams()
                    + " streams a tunnel connection may carry is the connection window, which HTTP/2 caps at "
                    + "2^31-1 bytes: lower it to at most " + Converters.humanSize(largest));
        }
        MuxSettings mux = new MuxSettings(window, m.maxConcurrentStreams(), m.maxFrameSize(), m.maxHeaderListSize(),
                message, m.maxRstPerWindow(), m.rstWindowSeconds(), pingEvery, pingWait, m.streamWriteLowWaterMark(),
                m.streamWriteHighWaterMark(), backlog);
        BrowserConnectionLimits b = base.browserLimits();
        int browsers = (int) s.inRange(BROWSER_CONNECTIONS, s.integer(BROWSER_CONNECTIONS, browserConnections,
                b.maxConnections()), 16, 1_000_000, false);
        int unauthenticated = (int) s.inRange(UNAUTHENTICATED_CONNECTIONS, s.integer(UNAUTHENTICATED_CONNECTIONS,
                unauthenticatedConnections, Math.min(browsers, b.maxUnauthenticated())), 1, browsers, false);
        Duration unauthenticatedFor = s.inRange(UNAUTHENTICATED_TIMEOUT, s.duration(UNAUTHENTICATED_TIMEOUT,
                unauthenticatedTimeout, b.unauthenticatedTimeout()), Duration.ofSeconds(1), Duration.ofMinutes(10));
        Duration bodyIdle = s.inRange(BODY_IDLE_TIMEOUT, s.duration(BODY_IDLE_TIMEOUT, bodyIdleTimeout,
                b.bodyIdleTimeout()), Duration.ofSeconds(1), Duration.ofHours(1));
        return new IngressConfig(base.listen(), base.gateway(), mux, base.poolSize(), connect, open, headers,
                base.ioThreads(), headTimeout, new BrowserConnectionLimits(browsers, unauthenticated,
                unauthenticatedFor, bodyIdle));
    }

    /** The limits of the control API and the metrics endpoint, from the flags, environment, file or defaults. */
    LocalHttpServer.Limits localLimits(Settings s) {
        LocalHttpServer.Limits d = LocalHttpServer.Limits.defaults();
        Duration timeout = s.inRange(LOCAL_REQUEST_TIMEOUT, s.duration(LOCAL_REQUEST_TIMEOUT, localRequestTimeout,
                d.requestTimeout()), Duration.ofSeconds(1), Duration.ofMinutes(10));
        int connections = (int) s.inRange(LOCAL_CONNECTIONS, s.integer(LOCAL_CONNECTIONS, localConnections,
                d.maxConnections()), 1, 10_000, false);
        return d.withRequestTimeout(timeout).withMaxConnections(connections);
    }

    /** The settings of {@code config} by key, in the forms the flags take: for the startup log line. */
    static Map<String, String> describe(IngressConfig config) {
        return describe(config, LocalHttpServer.Limits.defaults());
    }

    /** As above, with the local endpoints' limits. */
    static Map<String, String> describe(IngressConfig config, LocalHttpServer.Limits local) {
        MuxSettings m = config.mux();
        BrowserConnectionLimits b = config.browserLimits();
        Map<String, String> out = new LinkedHashMap<>();
        out.put(REQUEST_HEAD_TIMEOUT, Cli.human(config.requestHeadTimeout()));
        out.put(MAX_REQUEST_HEADERS, Converters.humanSize(config.maxRequestHead()));
        out.put(CONNECT_TIMEOUT, Cli.human(config.connectTimeout()));
        out.put(OPEN_TIMEOUT, Cli.human(config.openTimeout()));
        out.put(STREAM_WINDOW, Converters.humanSize(m.streamWindow()));
        out.put(WEBSOCKET_MESSAGE, Converters.humanSize(m.maxWebSocketMessage()));
        out.put(KEEPALIVE_INTERVAL, Cli.human(m.pingInterval()));
        out.put(KEEPALIVE_TIMEOUT, Cli.human(m.pingTimeout()));
        out.put(BROWSER_CONNECTIONS, Integer.toString(b.maxConnections()));
        out.put(UNAUTHENTICATED_CONNECTIONS, Integer.toString(b.maxUnauthenticated()));
        out.put(UNAUTHENTICATED_TIMEOUT, Cli.human(b.unauthenticatedTimeout()));
        out.put(BODY_IDLE_TIMEOUT, Cli.human(b.bodyIdleTimeout()));
        out.put(LOCAL_REQUEST_TIMEOUT, Cli.human(local.requestTimeout()));
        out.put(LOCAL_CONNECTIONS, Integer.toString(local.maxConnections()));
        out.put(WRITE_BACKLOG, Converters.humanSize(m.maxWriteBacklog()));
        return out;
    }
}
