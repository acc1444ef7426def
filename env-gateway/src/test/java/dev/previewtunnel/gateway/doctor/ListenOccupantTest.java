package dev.previewtunnel.gateway.doctor;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * What listens on serve's address, over real loopback sockets: nothing, a silent program, one answering HTTP,
 * one that closes at once, and anything at all when TLS is configured (the probe is plain; a running gateway's
 * own answer is covered by GatewayDoctorTest).
 */
class ListenOccupantTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(1);

    private static InetSocketAddress address(ServerSocket s) {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), s.getLocalPort());
    }

    private static ServerSocket listener() throws IOException {
        return new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    }

    @Test
    void nothingListeningIsFree() throws IOException {
        InetSocketAddress closed;
        try (ServerSocket s = listener()) {
            closed = address(s);
        }
        assertNull(ListenOccupant.of(closed, "/tunnel", false, TIMEOUT));
    }

    @Test
    void aSilentProgramAcceptedButDidNotAnswer() throws IOException {
        try (ServerSocket silent = listener()) {
            assertEquals("it accepted but did not answer an HTTP request",
                    ListenOccupant.of(address(silent), "/tunnel", false, TIMEOUT));
            assertEquals("something accepts TCP there; with TLS configured it is not probed further",
                    ListenOccupant.of(address(silent), "/tunnel", true, TIMEOUT));
        }
    }

    @Test
    void aProgramAnsweringHttpAndOneThatClosesAreSaidApart() throws Exception {
        try (ServerSocket web = listener()) {
            CompletableFuture<Void> server = CompletableFuture.runAsync(() -> {
                try (Socket s = web.accept()) { // answers 404 to the upgrade
                    readHead(s.getInputStream());
                    s.getOutputStream().write("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
                            .getBytes(StandardCharsets.US_ASCII));
                    s.getOutputStream().flush();
                    s.getInputStream().read();
                } catch (IOException e) {
                    // the probe closed first
                }
                try (Socket s = web.accept()) { // closes without answering
                    readHead(s.getInputStream());
                } catch (IOException e) {
                    // the probe closed first
                }
            });
            assertEquals("it answered HTTP 404", ListenOccupant.of(address(web), "/tunnel", false,
                    Duration.ofSeconds(5)));
            assertEquals("it accepted and closed the connection", ListenOccupant.of(address(web), "/tunnel", false,
                    Duration.ofSeconds(5)));
            server.get(10, TimeUnit.SECONDS);
        }
    }

    private static void readHead(InputStream in) throws IOException {
        int matched = 0;
        while (matched < 4) {
            int b = in.read();
            if (b < 0) {
                return;
            }
            matched = (b == '\r' || b == '\n') ? matched + 1 : 0;
        }
    }
}
