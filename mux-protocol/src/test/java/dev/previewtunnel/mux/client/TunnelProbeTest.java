package dev.previewtunnel.mux.client;

import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.server.MuxTestServer;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link TunnelProbe} and the typed failures of {@link TunnelClient} it reports, over real loopback sockets: each
 * way a dial can end (accepted, refused with the gateway's answer, nothing listening, silent, closed) is told
 * apart by its {@link TunnelConnectException.Reason}, and a stream open reports the gateway's typed refusal.
 */
class TunnelProbeTest {
    static final Transports TRANSPORTS = Transports.best();
    static final Duration TIMEOUT = Duration.ofSeconds(5);
    static EventLoopGroup group;
    static MuxTestServer server;

    @BeforeAll
    static void start() throws Exception {
        group = TRANSPORTS.newGroup(1, "probe-test");
        server = new MuxTestServer(group, TRANSPORTS, MuxSettings.defaults(), null);
    }

    @AfterAll
    static void stop() {
        server.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static URI url(int port, String path) {
        return URI.create("ws://127.0.0.1:" + port + path);
    }

    @Test
    void anAcceptedDialOpensAndRefusesStreamsWithTheirTypedError() {
        try (TunnelProbe probe = new TunnelProbe(TIMEOUT, Clock.systemUTC())) {
            TunnelProbe.Dial dial = probe.dial(url(server.port(), "/tunnel"), "secret-token", null);
            assertTrue(dial.accepted(), () -> String.valueOf(dial.failure()));
            assertEquals(101, dial.answer().status());
            assertNull(probe.openAndClose(dial.connection(), new Authority("localhost", 5173), "good"));
            Throwable refused = probe.openAndClose(dial.connection(), new Authority("localhost", 5173), "forged");
            assertEquals(TunnelError.GRANT_REFUSED, assertInstanceOf(TunnelStreamException.class, refused).error());
        }
    }

    @Test
    void aRefusedTokenAndAWrongPathCarryTheGatewaysAnswer() {
        try (TunnelProbe probe = new TunnelProbe(TIMEOUT, Clock.systemUTC())) {
            TunnelProbe.Dial refused = probe.dial(url(server.port(), "/tunnel"), "wrong-token", null);
            assertFalse(refused.accepted());
            assertEquals(TunnelConnectException.Reason.REFUSED, refused.failure().reason());
            assertEquals(401, refused.answer().status());
            assertEquals("token_refused", refused.answer().error());
            assertEquals("connection token refused", refused.answer().message());

            TunnelProbe.Dial missing = probe.dial(url(server.port(), "/tunnel"), null, null);
            assertEquals("token_missing", missing.answer().error(), "no token header at all when given none");

            TunnelProbe.Dial wrongPath = probe.dial(url(server.port(), "/wrong"), "secret-token", null);
            assertEquals(404, wrongPath.answer().status());
        }
    }

    @Test
    void nothingListeningIsUnreachable() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        try (TunnelProbe probe = new TunnelProbe(TIMEOUT, Clock.systemUTC())) {
            TunnelProbe.Dial dial = probe.dial(url(port, "/tunnel"), "secret-token", null);
            assertEquals(TunnelConnectException.Reason.UNREACHABLE, dial.failure().reason());
            assertNull(dial.answer());
        }
    }

    /** A listener that accepts (the kernel completes the handshake) but never answers: no answer, in bounded time. */
    @Test
    void aSilentListenerIsNoAnswer() throws IOException {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             TunnelProbe probe = new TunnelProbe(Duration.ofMillis(500), Clock.systemUTC())) {
            TunnelProbe.Dial dial = probe.dial(url(silent.getLocalPort(), "/tunnel"), null, null);
            assertEquals(TunnelConnectException.Reason.NO_ANSWER, dial.failure().reason());
        }
    }

    /** A listener that reads the upgrade and closes: closed; the upgrade it read carried no token header. */
    @Test
    void aListenerThatClosesIsClosedAndNoTokenHeaderIsSentWithoutAToken() throws Exception {
        try (ServerSocket closing = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             TunnelProbe probe = new TunnelProbe(TIMEOUT, Clock.systemUTC())) {
            CompletableFuture<String> request = CompletableFuture.supplyAsync(() -> {
                try (Socket s = closing.accept()) {
                    return head(s.getInputStream());
                } catch (IOException e) {
                    return "failed: " + e;
                }
            });
            TunnelProbe.Dial dial = probe.dial(url(closing.getLocalPort(), "/tunnel"), null, null);
            assertEquals(TunnelConnectException.Reason.CLOSED, dial.failure().reason());
            String head = request.get(5, TimeUnit.SECONDS);
            assertTrue(head.startsWith("GET /tunnel HTTP/1.1"), head);
            assertFalse(head.toLowerCase().contains("authorization"), head);
        }
    }

    /** A program that answers something that is not HTTP (an SSH banner): said as such, not as a refusal. */
    @Test
    void aListenerThatDoesNotSpeakHttpIsOther() throws Exception {
        try (ServerSocket ssh = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             TunnelProbe probe = new TunnelProbe(TIMEOUT, Clock.systemUTC())) {
            CompletableFuture<Void> banner = CompletableFuture.runAsync(() -> {
                try (Socket s = ssh.accept()) {
                    head(s.getInputStream());
                    s.getOutputStream().write("SSH-2.0-OpenSSH_9.6\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                    s.getOutputStream().flush();
                    s.getInputStream().read(); // until the probe closes
                } catch (IOException e) {
                    // the probe closed first
                }
            });
            TunnelProbe.Dial dial = probe.dial(url(ssh.getLocalPort(), "/tunnel"), null, null);
            banner.get(10, TimeUnit.SECONDS);
            assertEquals(TunnelConnectException.Reason.OTHER, dial.failure().reason(), dial.failure()::getMessage);
            assertNull(dial.answer());
            assertEquals("gateway answered the upgrade with something that is not HTTP", dial.failure().getMessage());
        }
    }

    private static String head(InputStream in) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        while (!buf.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            buf.write(b);
        }
        return buf.toString(StandardCharsets.ISO_8859_1);
    }
}
