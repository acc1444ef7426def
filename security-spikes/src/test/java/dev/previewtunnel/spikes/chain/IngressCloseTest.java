package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import dev.previewtunnel.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A stopped ingress leaves nothing open: browser connections it still held when its drain ran out (an idle
 * CONNECT tunnel, a kept-alive HTTP connection) see their socket closed, and the gateway sees every tunnel
 * connection of it go. Netty 4.2's event-loop shutdown with no quiet period does not reliably close the channels
 * still registered, so the ingress closes them itself.
 */
class IngressCloseTest {
    SampleApp app;
    TunnelStack stack;

    @BeforeEach
    void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        stack = TunnelStack.start(2);
        stack.grant("localhost", app.port());
    }

    @AfterEach
    void stop() {
        stack.close();
        app.close();
    }

    @Test
    void browserSocketsAndTunnelConnectionsAreClosedWhenTheIngressStops() throws Exception {
        InetSocketAddress proxy = stack.proxy();
        String auth = "Proxy-Authorization: Basic " + Base64.getEncoder().encodeToString(
                (stack.session().username() + ":" + stack.session().password()).getBytes(StandardCharsets.UTF_8));
        try (Socket tunnel = new Socket(proxy.getAddress(), proxy.getPort());
             Socket keptAlive = new Socket(proxy.getAddress(), proxy.getPort())) {
            // An idle CONNECT tunnel: 200, then nothing more in either direction.
            send(tunnel, "CONNECT localhost:" + app.port() + " HTTP/1.1\r\nHost: localhost:" + app.port() + "\r\n"
                    + auth + "\r\n\r\n");
            assertTrue(readHead(tunnel).startsWith("HTTP/1.1 200"));
            // A kept-alive connection after one complete exchange.
            send(keptAlive, "GET http://localhost:" + app.port() + "/hello HTTP/1.1\r\nHost: localhost:" + app.port()
                    + "\r\n" + auth + "\r\n\r\n");
            String head = readHead(keptAlive);
            assertTrue(head.startsWith("HTTP/1.1 200"), head);
            int length = Integer.parseInt(head.replaceAll("(?is).*content-length:\\s*(\\d+).*", "$1"));
            keptAlive.getInputStream().readNBytes(length);
            Await.until("the gateway sees the pool's connections", Duration.ofSeconds(10),
                    () -> stack.gateway().connectionCount() == 2);

            stack.ingress().close(Duration.ofMillis(300));

            assertClosedByPeer(tunnel, "the idle CONNECT tunnel");
            assertClosedByPeer(keptAlive, "the kept-alive connection");
            Await.until("the gateway sees every tunnel connection of the stopped ingress go", Duration.ofSeconds(10),
                    () -> stack.gateway().connectionCount() == 0);
        }
    }

    private static void send(Socket s, String text) throws Exception {
        s.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().flush();
    }

    private static String readHead(Socket s) throws Exception {
        s.setSoTimeout(15_000);
        InputStream in = s.getInputStream();
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            head.append((char) b);
        }
        return head.toString();
    }

    /** The next read sees the end of the stream (or a reset) within 5 s, never a timeout. */
    private static void assertClosedByPeer(Socket s, String what) throws Exception {
        s.setSoTimeout(5_000);
        try {
            int b;
            do {
                b = s.getInputStream().read();
            } while (b >= 0);
        } catch (SocketTimeoutException e) {
            fail(what + " is still open 5 s after the ingress stopped");
        } catch (SocketException reset) {
            // closed with a reset: closed all the same
        }
    }
}
