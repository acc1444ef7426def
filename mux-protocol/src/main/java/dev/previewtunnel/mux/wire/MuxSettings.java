package dev.previewtunnel.mux.wire;

import java.time.Duration;

/**
 * Flow-control and limit settings of one tunnel connection. Both sides use the same type; each applies the
 * values to what it receives.
 *
 * <p>Why these defaults (see docs/mux-protocol.md):
 * <ul>
 *   <li>{@code streamWindow} 1 MiB: a stream's window caps its throughput at window/RTT (1 MiB at 50 ms is
 *       about 168 Mbit/s) and also bounds what one stream can make the receiver buffer.</li>
 *   <li>{@code connectionWindow} = streams x stream window (at most 2^31-1, HTTP/2's largest window: settings
 *       whose product is larger are refused, not capped): the connection window must
 *       never be the throttle, or one stalled stream pins it and starves every other stream
 *       (netty#4423, grpc-java#1175). Per-stream windows do the throttling.</li>
 *   <li>{@code maxWriteBacklog} 64 MiB: a backstop, bytes the peer may leave unread before its connection is closed
 *       ({@code WriteBacklogLimit}). Answers a peer provokes are bounded where they are made (one PONG in flight,
 *       {@code PingAnswers}; Netty's 10,000 queued HTTP/2 control frames), so this only catches what nothing else
 *       bounds. Not 4 MiB: relayed data between two flushes waits in the WebSocket bridge's queue, which the flow
 *       controller does not see, so 200 streams of 1 MiB queued over 4 MiB on a healthy connection.</li>
 *   <li>{@code maxRstPerWindow}: browsers abort hundreds of connections on navigation, so Netty's default of
 *       200 RST_STREAM per 30 s would GOAWAY a healthy page load; the limit is raised, not removed.</li>
 * </ul>
 */
public record MuxSettings(
        int streamWindow,
        int maxConcurrentStreams,
        int maxFrameSize,
        long maxHeaderListSize,
        int maxWebSocketMessage,
        int maxRstPerWindow,
        int rstWindowSeconds,
        Duration pingInterval,
        Duration pingTimeout,
        int streamWriteLowWaterMark,
        int streamWriteHighWaterMark,
        long maxWriteBacklog) {

    public static final int MAX_WINDOW = Integer.MAX_VALUE;
    /**
     * The smallest accepted {@link #maxWriteBacklog}. Values near it can close healthy connections under many busy
     * streams (see the class comment); the default is 64 MiB.
     */
    public static final long MIN_WRITE_BACKLOG = 1L << 20;

    // The ranges of the settings an operator sets (both programs' flags check them through these): a stream window
    // of at most 1 GiB keeps one stream's buffering bounded; the keepalive between 1s and 1h.
    public static final SettingRange<Long> STREAM_WINDOW = new SettingRange<>("streamWindow", 64L << 10, 1L << 30);
    /** At least what every peer sends (HTTP/2 frames may span messages, so the frame size does not matter). */
    public static final SettingRange<Long> WEBSOCKET_MESSAGE =
            new SettingRange<>("maxWebSocketMessage", (long) MuxProtocol.MAX_SENT_MESSAGE, 64L << 20);
    public static final SettingRange<Duration> PING_INTERVAL =
            new SettingRange<>("pingInterval", Duration.ofSeconds(1), Duration.ofHours(1));
    public static final SettingRange<Duration> PING_TIMEOUT =
            new SettingRange<>("pingTimeout", Duration.ofSeconds(1), Duration.ofHours(1));
    public static final SettingRange<Long> WRITE_BACKLOG =
            new SettingRange<>("maxWriteBacklog", MIN_WRITE_BACKLOG, 1L << 30);
    public static final SettingRange<Integer> MAX_CONCURRENT_STREAMS =
            new SettingRange<>("maxConcurrentStreams", 1, 100_000);
    /** HTTP/2's own bounds of SETTINGS_MAX_FRAME_SIZE (RFC 9113 §6.5.2). */
    public static final SettingRange<Long> FRAME_SIZE = new SettingRange<>("maxFrameSize", 16_384L, 16_777_215L);
    public static final SettingRange<Long> HEADER_LIST = new SettingRange<>("maxHeaderListSize", 4L << 10, 1L << 20);
    public static final SettingRange<Integer> RESETS = new SettingRange<>("maxRstPerWindow", 1, 1_000_000);
    public static final SettingRange<Duration> RESET_WINDOW =
            new SettingRange<>("rstWindowSeconds", Duration.ofSeconds(1), Duration.ofHours(1));

    public MuxSettings {
        STREAM_WINDOW.check((long) streamWindow);
        MAX_CONCURRENT_STREAMS.check(maxConcurrentStreams);
        FRAME_SIZE.check((long) maxFrameSize);
        HEADER_LIST.check(maxHeaderListSize);
        WEBSOCKET_MESSAGE.check((long) maxWebSocketMessage);
        RESETS.check(maxRstPerWindow);
        RESET_WINDOW.check(Duration.ofSeconds(rstWindowSeconds));
        PING_INTERVAL.check(pingInterval);
        PING_TIMEOUT.check(pingTimeout);
        String window = connectionWindowProblem(streamWindow, maxConcurrentStreams);
        if (window != null) {
            throw new IllegalArgumentException("streamWindow x maxConcurrentStreams: " + window);
        }
        if (streamWriteLowWaterMark <= 0 || streamWriteHighWaterMark < streamWriteLowWaterMark) {
            throw new IllegalArgumentException("stream write water marks must satisfy 0 < low <= high");
        }
        WRITE_BACKLOG.check(maxWriteBacklog);
    }

    public static MuxSettings defaults() {
        return new MuxSettings(
                1024 * 1024,
                1024,
                64 * 1024,
                16 * 1024,
                256 * 1024,
                2_000,
                30,
                Duration.ofSeconds(15),
                Duration.ofSeconds(20),
                256 * 1024,
                512 * 1024,
                64L * 1024 * 1024);
    }

    /** The connection-level receive window: large enough that no set of stalled streams can exhaust it. */
    public int connectionWindow() {
        return Math.toIntExact((long) streamWindow * maxConcurrentStreams); // checked at construction
    }

    /**
     * Null when {@code streamWindow x streams} fits in an HTTP/2 window (2^31-1 bytes), else why not, with the
     * largest stream window (whole KiB) that fits: a capped connection window would let stalled streams starve
     * the others again, so the combination is refused instead.
     */
    public static String connectionWindowProblem(long streamWindow, long streams) {
        long product = streamWindow * streams;
        if (product <= MAX_WINDOW) {
            return null;
        }
        long largest = (MAX_WINDOW / streams) & ~1023L;
        return streamWindow + " x " + streams + " streams = " + product + " bytes of connection window, more than "
                + "HTTP/2 allows (2^31-1); with " + streams + " streams the stream window can be at most " + largest
                + " bytes (" + (largest >> 10) + "KiB)";
    }

    public MuxSettings withKeepAlive(Duration interval, Duration timeout) {
        return new MuxSettings(streamWindow, maxConcurrentStreams, maxFrameSize, maxHeaderListSize,
                maxWebSocketMessage, maxRstPerWindow, rstWindowSeconds, interval, timeout, streamWriteLowWaterMark,
                streamWriteHighWaterMark, maxWriteBacklog);
    }
}
