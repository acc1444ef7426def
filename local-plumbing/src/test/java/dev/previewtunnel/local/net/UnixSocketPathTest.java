package dev.previewtunnel.local.net;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import java.net.UnixDomainSocketAddress;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

class UnixSocketPathTest {

    @Test
    void unixPrefixMeansASocketFileAnythingElseHostPort() throws Exception {
        ListenEndpoint unix = ListenEndpoint.parse("unix:/run/user/1000/ptun/../ptun/gateway.sock");
        assertEquals(new UnixSocketPath(Path.of("/run/user/1000/ptun/gateway.sock")), unix);
        assertEquals("unix:/run/user/1000/ptun/gateway.sock", unix.toString());
        assertEquals(UnixDomainSocketAddress.of("/run/user/1000/ptun/gateway.sock"), unix.resolve());
        assertInstanceOf(ListenAddress.class, ListenEndpoint.parse("127.0.0.1:0"));
        assertEquals("missing :PORT (IPv6 needs brackets)",
                assertThrows(IllegalArgumentException.class, () -> ListenEndpoint.parse("unix")).getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "unix:|the socket path must be absolute",
            "unix:gateway.sock|the socket path must be absolute",
            "unix:/|the socket path names no file",
    })
    void malformedPathsNameTheProblem(String text, String problem) {
        assertEquals(problem, assertThrows(IllegalArgumentException.class, () -> UnixSocketPath.parse(text))
                .getMessage());
    }

    @Test
    void aPathLongerThanSunPathIsRefused() {
        String fits = "/" + "a".repeat(106);
        assertEquals(Path.of(fits), UnixSocketPath.parse("unix:" + fits).path());
        assertEquals("the socket path must be at most 107 bytes", assertThrows(IllegalArgumentException.class,
                () -> UnixSocketPath.parse("unix:" + fits + "b")).getMessage());
    }
}
