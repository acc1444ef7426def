package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.mux.MuxProtocol;
import dev.previewtunnel.mux.MuxSettings;
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

    /** Every key, for the config file's list of known keys. */
    static final List<String> KEYS = List.of(REQUEST_HEAD_TIMEOUT, MAX_REQUEST_HEADERS, CONNECT_TIMEOUT,
            OPEN_TIMEOUT, STREAM_WINDOW, WEBSOCKET_MESSAGE, KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT);

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
                m.streamWriteHighWaterMark());
        return new IngressConfig(base.listen(), base.gateway(), mux, base.poolSize(), connect, open, headers,
                base.ioThreads(), headTimeout);
    }

    /** The settings of {@code config} by key, in the forms the flags take: for the startup log line. */
    static Map<String, String> describe(IngressConfig config) {
        MuxSettings m = config.mux();
        Map<String, String> out = new LinkedHashMap<>();
        out.put(REQUEST_HEAD_TIMEOUT, Cli.human(config.requestHeadTimeout()));
        out.put(MAX_REQUEST_HEADERS, Converters.humanSize(config.maxRequestHead()));
        out.put(CONNECT_TIMEOUT, Cli.human(config.connectTimeout()));
        out.put(OPEN_TIMEOUT, Cli.human(config.openTimeout()));
        out.put(STREAM_WINDOW, Converters.humanSize(m.streamWindow()));
        out.put(WEBSOCKET_MESSAGE, Converters.humanSize(m.maxWebSocketMessage()));
        out.put(KEEPALIVE_INTERVAL, Cli.human(m.pingInterval()));
        out.put(KEEPALIVE_TIMEOUT, Cli.human(m.pingTimeout()));
        return out;
    }
}
