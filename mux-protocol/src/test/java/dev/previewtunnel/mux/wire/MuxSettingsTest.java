package dev.previewtunnel.mux.wire;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The connection window is streams x stream window exactly: a product HTTP/2 cannot carry is refused, not capped.
 * The settings an operator sets are checked against the ranges declared here (the flags use the same ranges).
 */
class MuxSettingsTest {
    @Test
    void theConnectionWindowIsTheExactProduct() {
        MuxSettings defaults = MuxSettings.defaults();
        assertEquals(1 << 30, defaults.connectionWindow(), "1 MiB x 1024");
        MuxSettings largest = withStreamWindow(defaults, 2047 * 1024);
        assertEquals(2047L * 1024 * 1024, largest.connectionWindow());
        assertNull(MuxSettings.connectionWindowProblem(2047 * 1024, 1024));
    }

    @Test
    void aProductBeyondHttp2sLargestWindowIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> withStreamWindow(MuxSettings.defaults(), 2 * 1024 * 1024));
        assertEquals("streamWindow x maxConcurrentStreams: 2097152 x 1024 streams = 2147483648 bytes of connection "
                + "window, more than HTTP/2 allows (2^31-1); with 1024 streams the stream window can be at most "
                + "2096128 bytes (2047KiB)", e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> withMaxConcurrentStreams(MuxSettings.defaults(), 100_000));
    }

    @Test
    void aSettingOutsideItsRangeIsRefusedWithTheRange() {
        SettingRange.OutOfRange low = assertThrows(SettingRange.OutOfRange.class,
                () -> withStreamWindow(MuxSettings.defaults(), 32 * 1024));
        assertEquals(MuxSettings.STREAM_WINDOW, low.range());
        assertEquals(32L * 1024, low.value());
        assertTrue(low.tooLow());
        SettingRange.OutOfRange high = assertThrows(SettingRange.OutOfRange.class,
                () -> MuxSettings.defaults().withKeepAlive(Duration.ofHours(2), Duration.ofHours(2)));
        assertEquals("pingInterval", high.range().setting());
        assertFalse(high.tooLow());
        assertEquals("pingInterval must be in [PT1S, PT1H], was PT2H", high.getMessage());
    }

    private static MuxSettings withStreamWindow(MuxSettings s, int window) {
        return new MuxSettings(window, s.maxConcurrentStreams(), s.maxFrameSize(), s.maxHeaderListSize(),
                s.maxWebSocketMessage(), s.maxRstPerWindow(), s.rstWindowSeconds(), s.pingInterval(), s.pingTimeout(),
                s.streamWriteLowWaterMark(), s.streamWriteHighWaterMark(), s.maxWriteBacklog());
    }

    private static MuxSettings withMaxConcurrentStreams(MuxSettings s, int streams) {
        return new MuxSettings(s.streamWindow(), streams, s.maxFrameSize(), s.maxHeaderListSize(),
                s.maxWebSocketMessage(), s.maxRstPerWindow(), s.rstWindowSeconds(), s.pingInterval(), s.pingTimeout(),
                s.streamWriteLowWaterMark(), s.streamWriteHighWaterMark(), s.maxWriteBacklog());
    }
}
