package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.LocalEndpointOptions;
import dev.previewtunnel.cli.MuxLimitOptions;
import dev.previewtunnel.cli.OptionRange;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.cli.SettingsProvider;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayLimits;
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
 * The abuse limits of {@code serve}, each a flag, a {@code PTUN_GATEWAY_*} variable and a config-file key with the
 * default of {@link GatewayLimits#defaults()}, {@link MuxSettings#defaults()} and {@link GatewayConfig#defaults}.
 * What each one defends is in docs/security.md; the help text states the default and the accepted range, and a
 * value outside the range stops the start naming the key (never clamped).
 *
 * <p>The defaults in the descriptions are literals (annotations need constants); {@code ServeLimitsTest} checks
 * them against the default objects so the two cannot drift apart.
 */
final class LimitOptions {
    static final String STREAMS_PER_CONNECTION = "max-streams-per-connection";
    static final String STREAMS_PER_SESSION = "max-streams-per-session";
    static final String OPENS_PER_SECOND = "max-opens-per-second";
    static final String OPEN_BURST = "open-burst";
    static final String PENDING_DIALS = "max-pending-dials";
    static final String HEADER_LIST = "max-header-list-size";
    static final String FRAME_SIZE = "max-frame-size";
    static final String RESETS = "max-resets";
    static final String RESET_WINDOW = "reset-window";
    static final String QUEUED_BYTES = "max-queued-bytes";
    static final String STREAM_IDLE = "stream-idle-timeout";
    static final String CONNECTION_IDLE = "connection-idle-timeout";
    static final String HANDSHAKE = "handshake-timeout";
    static final String TUNNEL_CONNECTIONS = "max-tunnel-connections";
    static final String HANDSHAKING_CONNECTIONS = "max-handshaking-connections";
    static final String MAX_REVOCATIONS = "max-revocations";
    static final String CONNECTIONS_PER_TOKEN = "max-connections-per-token";
    static final String GRANT_FAILURES = "max-grant-failures";
    static final String GRANT_FAILURE_COOLDOWN = "grant-failure-cooldown";
    static final String TOKEN_FAILURES = "max-token-failures";

    /** Every key, for the config file's list of known keys. */
    static final Set<String> KEYS = SettingsProvider.keysOf(new LimitOptions());

    /** The tunnel-connection limits both programs share. */
    @ArgGroup(validate = false)
    MuxLimitOptions mux = new MuxLimitOptions();

    /** The admin and metrics endpoints' limits. */
    @ArgGroup(validate = false)
    LocalEndpointOptions local = new LocalEndpointOptions();

    @Option(names = "--" + STREAMS_PER_CONNECTION, paramLabel = "N",
            description = "Concurrent streams on one tunnel connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); "
                    + "1 to 100000 (default: 1024).")
    Integer streamsPerConnection;

    @Option(names = "--" + STREAMS_PER_SESSION, paramLabel = "N",
            description = "Concurrent streams of one browser session across all its connections; more are "
                    + "refused with too_many_streams (session_stream_limit); 1 to 1000000 (default: 512).")
    Integer streamsPerSession;

    @Option(names = "--" + OPENS_PER_SECOND, paramLabel = "RATE", converter = Converters.RateConverter.class,
            description = "Sustained stream opens per second per browser session (token bucket rate, counted "
                    + "after the grant verified; too_many_streams (session_rate_limit) beyond it); 0.1 to 1000000 "
                    + "(default: 200).")
    Double opensPerSecond;

    @Option(names = "--" + OPEN_BURST, paramLabel = "N",
            description = "Stream opens a session may make at once (token bucket size); a page load that "
                    + "opens and aborts hundreds of connections must fit; 1 to 1000000 (default: 1000).")
    Integer openBurst;

    @Option(names = "--" + PENDING_DIALS, paramLabel = "N",
            description = "Target dials in progress on one tunnel connection; more are refused with "
                    + "too_many_streams (pending_dial_limit); 1 to 100000 (default: 128).")
    Integer pendingDials;

    @Option(names = "--" + HEADER_LIST, paramLabel = "SIZE", converter = Converters.SizeConverter.class,
            description = "Largest header list of a stream open (a grant is under 1KiB); 4KiB to 1MiB "
                    + "(default: 16KiB).")
    Long headerListSize;

    @Option(names = "--" + FRAME_SIZE, paramLabel = "SIZE", converter = Converters.SizeConverter.class,
            description = "Largest HTTP/2 frame the gateway accepts (SETTINGS_MAX_FRAME_SIZE); 16KiB to "
                    + "16777215 (default: 64KiB).")
    Long frameSize;

    @Option(names = "--" + RESETS, paramLabel = "N",
            description = "RST_STREAM frames one connection may send within --" + RESET_WINDOW + "; one more "
                    + "closes it with GOAWAY ENHANCE_YOUR_CALM (rapid reset). A page load aborts hundreds; "
                    + "1 to 1000000 (default: 2000).")
    Integer resets;

    @Option(names = "--" + RESET_WINDOW, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "The window of --" + RESETS + ", whole seconds; 1s to 1h (default: 30s).")
    Duration resetWindow;

    @Option(names = "--" + QUEUED_BYTES, paramLabel = "SIZE", converter = Converters.SizeConverter.class,
            description = "Target bytes the streams of one tunnel connection may hold unsent, together: each "
                    + "stream stops reading its target at its share (this divided by the connection's streams, "
                    + "as a power of two from 32KiB up to 512KiB). Bounds the gateway's buffer memory per "
                    + "connection, about this plus 16KiB (one read) per stream; 1MiB to 1GiB (default: 8MiB).")
    Long queuedBytes;

    @Option(names = "--" + STREAM_IDLE, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "Close a stream with no bytes either way for this long; 1s to 7d (default: 30m).")
    Duration streamIdleTimeout;

    @Option(names = "--" + CONNECTION_IDLE, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "Close (GOAWAY) a tunnel connection without streams for this long; 1s to 7d "
                    + "(default: 10m).")
    Duration connectionIdleTimeout;

    @Option(names = "--" + HANDSHAKE, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "From accept to completed WebSocket upgrade, a fixed deadline (slowloris); 1s to 10m "
                    + "(default: 10s).")
    Duration handshakeTimeout;

    @Option(names = "--" + TUNNEL_CONNECTIONS, paramLabel = "N",
            description = "Tunnel connections open at once, upgraded or not; more are closed at accept (lowered to "
                    + "what the open-files limit allows, with a warning); 1 to 1000000 (default: 1024).")
    Integer tunnelConnections;

    @Option(names = "--" + HANDSHAKING_CONNECTIONS, paramLabel = "N",
            description = "Of those, connections that have not completed the upgrade (token not yet verified); "
                    + "the rest is headroom for authenticated ones; 1 to --" + TUNNEL_CONNECTIONS
                    + " (default: 64).")
    Integer handshakingConnections;

    @Option(names = "--" + MAX_REVOCATIONS, paramLabel = "N",
            description = "Revocations (grant/token ids and sessions) the gateway holds at once, each kept as long "
                    + "as what it revokes could live (ids 48h1m, sessions 2 x --max-grant-lifetime + 1m); at the "
                    + "limit a new one is refused (HTTP 507), none is forgotten; 1 to 100000 (default: 10000).")
    Integer maxRevocations;

    @Option(names = "--" + CONNECTIONS_PER_TOKEN, paramLabel = "N",
            description = "Tunnel connections one connection token may hold open at once; one more upgrade is "
                    + "answered 429 too_many_connections. An ingress keeps at most 64; 1 to 100000 (default: 256).")
    Integer connectionsPerToken;

    @Option(names = "--" + GRANT_FAILURES, paramLabel = "N",
            description = "Failed grant verifications one connection token may cause per second, across all its "
                    + "connections; once spent, the token cools down (--" + GRANT_FAILURE_COOLDOWN + "); 1 to "
                    + "100000 (default: 100).")
    Integer grantFailures;

    @Option(names = "--" + GRANT_FAILURE_COOLDOWN, paramLabel = "DURATION",
            converter = Converters.DurationConverter.class,
            description = "How long a token that spent --" + GRANT_FAILURES + " has every stream open refused "
                    + "without verifying (too_many_streams, grant_failure_cooldown); 1s to 1h (default: 10s).")
    Duration grantFailureCooldown;

    @Option(names = "--" + TOKEN_FAILURES, paramLabel = "N",
            description = "Failed connection-token verifications per second, gateway-wide; beyond it an upgrade "
                    + "with a token that never verified here is answered 429 too_many_failed_handshakes without "
                    + "verifying (tokens that verified before are still checked); 1 to 100000 (default: 100).")
    Integer tokenFailures;

    /**
     * {@code base} with every limit picocli filled (the flag, else the environment or config file through the
     * settings provider), else the defaults in {@code base}.
     */
    GatewayConfig applyTo(GatewayConfig base, Settings s) {
        MuxSettings m = base.mux();
        GatewayLimits l = base.limits();
        int perConnection = OptionRange.check(s, STREAMS_PER_CONNECTION, MuxSettings.MAX_CONCURRENT_STREAMS,
                requireNonNullElse(streamsPerConnection, m.maxConcurrentStreams()));
        int perSession = OptionRange.check(s, STREAMS_PER_SESSION, GatewayLimits.STREAMS_PER_SESSION,
                requireNonNullElse(streamsPerSession, l.streamsPerSession()));
        double rate = requireNonNullElse(opensPerSecond, l.opensPerSecond());
        if (rate < 0.1 || rate > 1_000_000) {
            throw s.invalid(OPENS_PER_SECOND, "must be 0.1 to 1000000, got " + rate);
        }
        int burst = OptionRange.check(s, OPEN_BURST, GatewayLimits.OPEN_BURST,
                requireNonNullElse(openBurst, l.openBurst()));
        int dials = OptionRange.check(s, PENDING_DIALS, GatewayLimits.PENDING_DIALS,
                requireNonNullElse(pendingDials, l.pendingDialsPerConnection()));
        long headers = OptionRange.check(s, HEADER_LIST, MuxSettings.HEADER_LIST,
                requireNonNullElse(headerListSize, m.maxHeaderListSize()));
        int frame = (int) (long) OptionRange.check(s, FRAME_SIZE, MuxSettings.FRAME_SIZE,
                requireNonNullElse(frameSize, (long) m.maxFrameSize()));
        int resetCount = OptionRange.check(s, RESETS, MuxSettings.RESETS,
                requireNonNullElse(resets, m.maxRstPerWindow()));
        Duration window = OptionRange.check(s, RESET_WINDOW, MuxSettings.RESET_WINDOW,
                requireNonNullElse(resetWindow, Duration.ofSeconds(m.rstWindowSeconds())));
        if (window.toMillis() % 1000 != 0) {
            throw s.invalid(RESET_WINDOW, "must be whole seconds, got " + window);
        }
        MuxLimitOptions.Values v = mux.values(m, s);
        int streamWin = v.streamWindow();
        long queuedLimit = OptionRange.check(s, QUEUED_BYTES, GatewayLimits.QUEUED_BYTES,
                requireNonNullElse(queuedBytes, l.queuedBytesPerConnection()));
        Duration streamIdle = OptionRange.check(s, STREAM_IDLE, GatewayLimits.STREAM_IDLE,
                requireNonNullElse(streamIdleTimeout, l.streamIdleTimeout()));
        Duration connectionIdle = OptionRange.check(s, CONNECTION_IDLE, GatewayLimits.CONNECTION_IDLE,
                requireNonNullElse(connectionIdleTimeout, l.connectionIdleTimeout()));
        Duration handshake = OptionRange.check(s, HANDSHAKE, GatewayConfig.HANDSHAKE_TIMEOUT,
                requireNonNullElse(handshakeTimeout, base.handshakeTimeout()));
        int revocations = OptionRange.check(s, MAX_REVOCATIONS, GatewayLimits.MAX_REVOCATIONS,
                requireNonNullElse(maxRevocations, l.maxRevocations()));

        if (MuxSettings.connectionWindowProblem(streamWin, perConnection) != null) {
            // The connection window (streams x stream window) must hold every stream's window; capping it would
            // let stalled streams starve the rest, so the combination is refused.
            long largest = (MuxSettings.MAX_WINDOW / perConnection) & ~1023L;
            throw s.invalid(MuxLimitOptions.STREAM_WINDOW, Converters.humanSize(streamWin) + " x " + perConnection + " streams ("
                    + s.name(STREAMS_PER_CONNECTION) + ") is the connection window, which HTTP/2 caps at 2^31-1 "
                    + "bytes: lower it to at most " + Converters.humanSize(largest) + ", or "
                    + s.name(STREAMS_PER_CONNECTION) + " to at most " + MuxSettings.MAX_WINDOW / streamWin);
        }
        MuxSettings muxSettings = new MuxSettings(streamWin, perConnection, frame, headers, v.maxWebSocketMessage(),
                resetCount, (int) window.toSeconds(), v.pingInterval(), v.pingTimeout(), m.streamWriteLowWaterMark(),
                m.streamWriteHighWaterMark(), v.maxWriteBacklog());
        int tunnels = OptionRange.check(s, TUNNEL_CONNECTIONS, GatewayLimits.MAX_CONNECTIONS,
                requireNonNullElse(tunnelConnections, l.maxConnections()));
        int handshaking = (int) s.inRange(HANDSHAKING_CONNECTIONS, requireNonNullElse(handshakingConnections,
                Math.min(tunnels, l.maxHandshaking())), 1, tunnels, false);
        int perToken = OptionRange.check(s, CONNECTIONS_PER_TOKEN, GatewayLimits.CONNECTIONS_PER_TOKEN,
                requireNonNullElse(connectionsPerToken, l.connectionsPerToken()));
        int grantFails = OptionRange.check(s, GRANT_FAILURES, GatewayLimits.GRANT_FAILURES,
                requireNonNullElse(grantFailures, l.grantFailuresPerSecond()));
        Duration coolDown = OptionRange.check(s, GRANT_FAILURE_COOLDOWN, GatewayLimits.GRANT_FAILURE_COOL_DOWN,
                requireNonNullElse(grantFailureCooldown, l.grantFailureCoolDown()));
        int tokenFails = OptionRange.check(s, TOKEN_FAILURES, GatewayLimits.TOKEN_FAILURES,
                requireNonNullElse(tokenFailures, l.tokenFailuresPerSecond()));
        GatewayLimits limits = new GatewayLimits(perSession, rate, burst, dials, streamIdle, connectionIdle,
                queuedLimit).withConnectionCaps(tunnels, handshaking).withMaxRevocations(revocations)
                .withTokenLimits(perToken, grantFails, coolDown, tokenFails);
        return base.withMux(muxSettings).withLimits(limits).withHandshakeTimeout(handshake);
    }

    /** The limits of the admin and metrics endpoints, from the flags, environment, file or defaults. */
    LocalHttpServer.Limits localLimits(Settings s) {
        return local.limits(s);
    }

    /** The limits of {@code config} by key, in the forms the flags take: for the startup log line. */
    static Map<String, String> describe(GatewayConfig config) {
        return describe(config, LocalHttpServer.Limits.defaults());
    }

    /** As above, with the local endpoints' limits. */
    static Map<String, String> describe(GatewayConfig config, LocalHttpServer.Limits local) {
        MuxSettings m = config.mux();
        GatewayLimits l = config.limits();
        Map<String, String> out = new LinkedHashMap<>();
        out.put(STREAMS_PER_CONNECTION, Integer.toString(m.maxConcurrentStreams()));
        out.put(STREAMS_PER_SESSION, Integer.toString(l.streamsPerSession()));
        out.put(OPENS_PER_SECOND, rate(l.opensPerSecond()));
        out.put(OPEN_BURST, Integer.toString(l.openBurst()));
        out.put(PENDING_DIALS, Integer.toString(l.pendingDialsPerConnection()));
        out.put(HEADER_LIST, Converters.humanSize(m.maxHeaderListSize()));
        out.put(FRAME_SIZE, Converters.humanSize(m.maxFrameSize()));
        out.put(RESETS, Integer.toString(m.maxRstPerWindow()));
        out.put(RESET_WINDOW, m.rstWindowSeconds() + "s");
        out.put(QUEUED_BYTES, Converters.humanSize(l.queuedBytesPerConnection()));
        out.put(STREAM_IDLE, Cli.human(l.streamIdleTimeout()));
        out.put(CONNECTION_IDLE, Cli.human(l.connectionIdleTimeout()));
        out.put(HANDSHAKE, Cli.human(config.handshakeTimeout()));
        out.put(TUNNEL_CONNECTIONS, Integer.toString(l.maxConnections()));
        out.put(HANDSHAKING_CONNECTIONS, Integer.toString(l.maxHandshaking()));
        out.put(MAX_REVOCATIONS, Integer.toString(l.maxRevocations()));
        out.put(CONNECTIONS_PER_TOKEN, Integer.toString(l.connectionsPerToken()));
        out.put(GRANT_FAILURES, Integer.toString(l.grantFailuresPerSecond()));
        out.put(GRANT_FAILURE_COOLDOWN, Cli.human(l.grantFailureCoolDown()));
        out.put(TOKEN_FAILURES, Integer.toString(l.tokenFailuresPerSecond()));
        MuxLimitOptions.describe(m, out);
        LocalEndpointOptions.describe(local, out);
        return out;
    }

    private static String rate(double r) {
        return r == Math.rint(r) ? Long.toString((long) r) : Double.toString(r);
    }
}
