package dev.previewtunnel.cli;

import dev.previewtunnel.mux.wire.MuxSettings;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.Map;

import static java.util.Objects.requireNonNullElse;

/**
 * The tunnel-connection limits both programs take, declared once: the stream window, the largest WebSocket
 * message, the keepalive and the write backlog, each a flag, a {@code PTUN_*} variable and a config-file key with
 * the default of {@link MuxSettings#defaults()}. Each program adds it to its limits group and sets the rest of
 * its {@link MuxSettings} itself; the connection-window check stays there (its message names that program's
 * stream count).
 *
 * <p>The defaults in the descriptions are literals (annotations need constants); RunLimitsTest and ServeLimitsTest
 * check them against the default objects.
 */
public final class MuxLimitOptions {
    public static final String STREAM_WINDOW = "stream-window";
    public static final String WEBSOCKET_MESSAGE = "max-websocket-message";
    public static final String KEEPALIVE_INTERVAL = "keepalive-interval";
    public static final String KEEPALIVE_TIMEOUT = "keepalive-timeout";
    public static final String WRITE_BACKLOG = "max-write-backlog";

    @Option(names = "--" + STREAM_WINDOW, paramLabel = "SIZE", converter = Converters.SizeConverter.class,
            description = "HTTP/2 receive window of each stream: the most the peer may send ahead of a slow reader "
                    + "(what one stream can make this side buffer), and (divided by the round-trip time) a "
                    + "stream's throughput cap; the connection window is this times the streams a connection may "
                    + "carry; 64KiB to 1GiB (default: 1MiB).")
    Long streamWindow;

    @Option(names = "--" + WEBSOCKET_MESSAGE, paramLabel = "SIZE", converter = Converters.SizeConverter.class,
            description = "Largest WebSocket message accepted from the peer; bigger ones close the connection "
                    + "(1009). Peers send at most 16KiB, so that is the minimum; 16KiB to 64MiB (default: 256KiB).")
    Long webSocketMessage;

    @Option(names = "--" + KEEPALIVE_INTERVAL, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "Send an HTTP/2 PING on a tunnel connection after this long without receiving anything "
                    + "from the peer (at most 3/4 of --keepalive-timeout); 1s to 1h (default: 15s).")
    Duration keepaliveInterval;

    @Option(names = "--" + KEEPALIVE_TIMEOUT, paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "Close a tunnel connection when nothing, not even a PING answer, has been received from "
                    + "the peer for this long (the ingress reconnects); 1s to 1h (default: 20s).")
    Duration keepaliveTimeout;

    @Option(names = "--" + WRITE_BACKLOG, paramLabel = "SIZE", converter = Converters.SizeConverter.class,
            description = "Bytes the peer may leave unread on a tunnel connection (answers it provoked and never "
                    + "read: PONGs, PING and SETTINGS ACKs, resets) before the connection is closed; relayed data "
                    + "never queues that much (flow control); 1MiB to 1GiB (default: 64MiB).")
    Long writeBacklog;

    /**
     * These settings as picocli filled them (the flag, else the environment or config file through
     * {@link SettingsProvider}), else {@code base}'s, each within its range in {@link MuxSettings} (a value outside
     * is a usage error naming the option and where its value came from); the stream window is not yet checked
     * against the stream count (the caller's message names it).
     */
    public Values values(MuxSettings base, Settings s) {
        int window = (int) (long) OptionRange.check(s, STREAM_WINDOW, MuxSettings.STREAM_WINDOW,
                requireNonNullElse(streamWindow, (long) base.streamWindow()));
        int message = (int) (long) OptionRange.check(s, WEBSOCKET_MESSAGE, MuxSettings.WEBSOCKET_MESSAGE,
                requireNonNullElse(webSocketMessage, (long) base.maxWebSocketMessage()));
        Duration pingEvery = OptionRange.check(s, KEEPALIVE_INTERVAL, MuxSettings.PING_INTERVAL,
                requireNonNullElse(keepaliveInterval, base.pingInterval()));
        Duration pingWait = OptionRange.check(s, KEEPALIVE_TIMEOUT, MuxSettings.PING_TIMEOUT,
                requireNonNullElse(keepaliveTimeout, base.pingTimeout()));
        long backlog = OptionRange.check(s, WRITE_BACKLOG, MuxSettings.WRITE_BACKLOG,
                requireNonNullElse(writeBacklog, base.maxWriteBacklog()));
        return new Values(window, message, pingEvery, pingWait, backlog);
    }

    /** The values of this group, for the {@link MuxSettings} each program builds with its stream count. */
    public record Values(int streamWindow, int maxWebSocketMessage, Duration pingInterval, Duration pingTimeout,
                         long maxWriteBacklog) {
    }

    /** Adds these settings of {@code m} to {@code out} by key, in the forms the flags take (the startup log). */
    public static void describe(MuxSettings m, Map<String, String> out) {
        out.put(STREAM_WINDOW, Converters.humanSize(m.streamWindow()));
        out.put(WEBSOCKET_MESSAGE, Converters.humanSize(m.maxWebSocketMessage()));
        out.put(KEEPALIVE_INTERVAL, Cli.human(m.pingInterval()));
        out.put(KEEPALIVE_TIMEOUT, Cli.human(m.pingTimeout()));
        out.put(WRITE_BACKLOG, Converters.humanSize(m.maxWriteBacklog()));
    }
}
