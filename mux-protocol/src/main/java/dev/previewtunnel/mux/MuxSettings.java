package dev.previewtunnel.mux;

import java.time.Duration;

/**
 * Flow-control and limit settings of one tunnel connection. Both sides use the same type; each applies the
 * values to what it receives.
 *
 * <p>Why these defaults (see docs/mux-protocol.md):
 * <ul>
 *   <li>{@code streamWindow} 1 MiB: a stream's window caps its throughput at window/RTT (1 MiB at 50 ms is
 *       about 168 Mbit/s) and also bounds what one stream can make the receiver buffer.</li>
 *   <li>{@code connectionWindow} = streams x stream window (capped at 2^31-1): the connection window must
 *       never be the throttle, or one stalled stream pins it and starves every other stream
 *       (netty#4423, grpc-java#1175). Per-stream windows do the throttling.</li>
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
        int streamWriteHighWaterMark) {

    public static final int MAX_WINDOW = Integer.MAX_VALUE;

    public MuxSettings {
        requireRange("streamWindow", streamWindow, 65_535, MAX_WINDOW);
        requireRange("maxConcurrentStreams", maxConcurrentStreams, 1, 100_000);
        requireRange("maxFrameSize", maxFrameSize, 16_384, 16_777_215);
        if (maxHeaderListSize < 1024) {
            throw new IllegalArgumentException("maxHeaderListSize must be >= 1024, was " + maxHeaderListSize);
        }
        // At least what every peer sends (HTTP/2 frames may span messages, so the frame size does not matter).
        requireRange("maxWebSocketMessage", maxWebSocketMessage, MuxProtocol.MAX_SENT_MESSAGE, 64 * 1024 * 1024);
        requireRange("maxRstPerWindow", maxRstPerWindow, 1, Integer.MAX_VALUE);
        requireRange("rstWindowSeconds", rstWindowSeconds, 1, 3600);
        if (pingInterval.isZero() || pingInterval.isNegative() || pingTimeout.isZero() || pingTimeout.isNegative()) {
            throw new IllegalArgumentException("ping interval and timeout must be positive");
        }
        if (streamWriteLowWaterMark <= 0 || streamWriteHighWaterMark < streamWriteLowWaterMark) {
            throw new IllegalArgumentException("stream write water marks must satisfy 0 < low <= high");
        }
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
                512 * 1024);
    }

    /** The connection-level receive window: large enough that no set of stalled streams can exhaust it. */
    public int connectionWindow() {
        long window = (long) streamWindow * maxConcurrentStreams;
        return (int) Math.min(window, MAX_WINDOW);
    }

    public MuxSettings withStreamWindow(int window) {
        return new MuxSettings(window, maxConcurrentStreams, maxFrameSize, maxHeaderListSize, maxWebSocketMessage,
                maxRstPerWindow, rstWindowSeconds, pingInterval, pingTimeout, streamWriteLowWaterMark,
                streamWriteHighWaterMark);
    }

    public MuxSettings withMaxConcurrentStreams(int streams) {
        return new MuxSettings(streamWindow, streams, maxFrameSize, maxHeaderListSize, maxWebSocketMessage,
                maxRstPerWindow, rstWindowSeconds, pingInterval, pingTimeout, streamWriteLowWaterMark,
                streamWriteHighWaterMark);
    }

    public MuxSettings withKeepAlive(Duration interval, Duration timeout) {
        return new MuxSettings(streamWindow, maxConcurrentStreams, maxFrameSize, maxHeaderListSize,
                maxWebSocketMessage, maxRstPerWindow, rstWindowSeconds, interval, timeout, streamWriteLowWaterMark,
                streamWriteHighWaterMark);
    }

    private static void requireRange(String name, long value, long min, long max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], was " + value);
        }
    }
}
