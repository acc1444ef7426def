package dev.previewtunnel.mux.wire;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The connection window is streams x stream window exactly: a product HTTP/2 cannot carry is refused, not capped. */
class MuxSettingsTest {
    @Test
    void theConnectionWindowIsTheExactProduct() {
        MuxSettings defaults = MuxSettings.defaults();
        assertEquals(1 << 30, defaults.connectionWindow(), "1 MiB x 1024");
        MuxSettings largest = defaults.withStreamWindow(2047 * 1024);
        assertEquals(2047L * 1024 * 1024, largest.connectionWindow());
        assertNull(MuxSettings.connectionWindowProblem(2047 * 1024, 1024));
    }

    @Test
    void aProductBeyondHttp2sLargestWindowIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MuxSettings.defaults().withStreamWindow(2 * 1024 * 1024));
        assertEquals("streamWindow x maxConcurrentStreams: 2097152 x 1024 streams = 2147483648 bytes of connection "
                + "window, more than HTTP/2 allows (2^31-1); with 1024 streams the stream window can be at most "
                + "2096128 bytes (2047KiB)", e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> MuxSettings.defaults().withMaxConcurrentStreams(100_000));
    }
}
