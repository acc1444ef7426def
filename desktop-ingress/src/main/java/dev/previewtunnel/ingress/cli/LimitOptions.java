package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.LocalEndpointOptions;
import dev.previewtunnel.cli.MuxLimitOptions;
import dev.previewtunnel.cli.OptionRange;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.cli.SettingsProvider;
import dev.previewtunnel.ingress.BrowserConnectionLimits;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.local.http.LocalHttpServer;
import dev.previewtunnel.mux.wire.MuxSettings;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

import static java.util.Objects.requireNonNullElse;

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
    static final String BROWSER_CONNECTIONS = "max-browser-connections";
    static final String UNAUTHENTICATED_CONNECTIONS = "max-unauthenticated-connections";
    static final String UNAUTHENTICATED_TIMEOUT = "unauthenticated-timeout";
    static final String BODY_IDLE_TIMEOUT = "request-body-idle-timeout";

    /** Every key, for the config file's list of known keys. */
    static final Set<String> KEYS = SettingsProvider.keysOf(new LimitOptions());

    /** The tunnel-connection limits both programs share. */
    @ArgGroup(validate = false)
    MuxLimitOptions mux = new MuxLimitOptions();

    /** The control API's and metrics endpoint's limits. */
    @ArgGroup(validate = false)
    LocalEndpointOptions local = new LocalEndpointOptions();

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

    /**
     * {@code base} with each setting picocli filled (the flag, else the environment or config file through the
     * settings provider), else {@code base}'s, each within its range.
     */
    IngressConfig applyTo(IngressConfig base, Settings s) {
        MuxSettings m = base.mux();
        Duration headTimeout = OptionRange.check(s, REQUEST_HEAD_TIMEOUT, IngressConfig.REQUEST_HEAD_TIMEOUT,
                requireNonNullElse(requestHeadTimeout, base.requestHeadTimeout()));
        int headers = (int) (long) OptionRange.check(s, MAX_REQUEST_HEADERS, IngressConfig.MAX_REQUEST_HEAD,
                requireNonNullElse(maxRequestHeaders, (long) base.maxRequestHead()));
        Duration connect = OptionRange.check(s, CONNECT_TIMEOUT, IngressConfig.CONNECT_TIMEOUT,
                requireNonNullElse(connectTimeout, base.connectTimeout()));
        Duration open = OptionRange.check(s, OPEN_TIMEOUT, IngressConfig.OPEN_TIMEOUT,
                requireNonNullElse(openTimeout, base.openTimeout()));
        MuxLimitOptions.Values v = mux.values(m, s);
        int window = v.streamWindow();
        if (MuxSettings.connectionWindowProblem(window, m.maxConcurrentStreams()) != null) {
            // The connection window (streams x stream window) must hold every stream's window; capping it would
            // let stalled streams starve the rest, so the value is refused.
            long largest = (MuxSettings.MAX_WINDOW / m.maxConcurrentStreams()) & ~1023L;
            throw s.invalid(MuxLimitOptions.STREAM_WINDOW, Converters.humanSize(window) + " x the "
                    + m.maxConcurrentStreams() + " streams a tunnel connection may carry is the connection window, which HTTP/2 caps at "
                    + "2^31-1 bytes: lower it to at most " + Converters.humanSize(largest));
        }
        MuxSettings muxSettings = new MuxSettings(window, m.maxConcurrentStreams(), m.maxFrameSize(), m.maxHeaderListSize(),
                v.maxWebSocketMessage(), m.maxRstPerWindow(), m.rstWindowSeconds(), v.pingInterval(), v.pingTimeout(),
                m.streamWriteLowWaterMark(), m.streamWriteHighWaterMark(), v.maxWriteBacklog());
        BrowserConnectionLimits b = base.browserLimits();
        int browsers = OptionRange.check(s, BROWSER_CONNECTIONS, BrowserConnectionLimits.MAX_CONNECTIONS,
                requireNonNullElse(browserConnections, b.maxConnections()));
        int unauthenticated = (int) s.inRange(UNAUTHENTICATED_CONNECTIONS,
                requireNonNullElse(unauthenticatedConnections, Math.min(browsers, b.maxUnauthenticated())), 1,
                browsers, false);
        Duration unauthenticatedFor = OptionRange.check(s, UNAUTHENTICATED_TIMEOUT,
                BrowserConnectionLimits.UNAUTHENTICATED_TIMEOUT,
                requireNonNullElse(unauthenticatedTimeout, b.unauthenticatedTimeout()));
        Duration bodyIdle = OptionRange.check(s, BODY_IDLE_TIMEOUT, BrowserConnectionLimits.BODY_IDLE_TIMEOUT,
                requireNonNullElse(bodyIdleTimeout, b.bodyIdleTimeout()));
        return new IngressConfig(base.listen(), base.gateway(), muxSettings, base.poolSize(), connect, open, headers,
                base.ioThreads(), headTimeout, new BrowserConnectionLimits(browsers, unauthenticated,
                unauthenticatedFor, bodyIdle));
    }

    /** The limits of the control API and the metrics endpoint, from the flags, environment, file or defaults. */
    LocalHttpServer.Limits localLimits(Settings s) {
        return local.limits(s);
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
        out.put(BROWSER_CONNECTIONS, Integer.toString(b.maxConnections()));
        out.put(UNAUTHENTICATED_CONNECTIONS, Integer.toString(b.maxUnauthenticated()));
        out.put(UNAUTHENTICATED_TIMEOUT, Cli.human(b.unauthenticatedTimeout()));
        out.put(BODY_IDLE_TIMEOUT, Cli.human(b.bodyIdleTimeout()));
        MuxLimitOptions.describe(m, out);
        LocalEndpointOptions.describe(local, out);
        return out;
    }
}
