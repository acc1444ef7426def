package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 1, the ingress's side: a hostile (or compromised) gateway that floods the ingress's tunnel
 * connection with WebSocket PINGs and never reads the PONGs. The ingress's tunnel connections are the
 * {@link TunnelClient} connections its pools open, with the same pipeline; the connection must be closed (one PONG
 * in flight, then 1,024 unanswered pings close it: {@code PingAnswers}) instead of queueing PONGs without bound. The flood itself is bounded
 * (64 MiB) so that the code before the fix fails the assertion instead of exhausting the test JVM.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class HostileGatewayPingFloodTest {
    private static final long FLOOD_LIMIT = 64L << 20;

    @Test
    void aGatewayThatFloodsPingsAndNeverReadsIsDisconnected() throws Exception {
        EventLoopGroup group = Transports.best().newGroup(1, "hostile-gateway-test");
        try (ServerSocket server = new ServerSocket()) {
            server.setReceiveBufferSize(4096); // inherited by the accepted socket: it never reads after the upgrade
            server.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            CompletableFuture<Long> flooded = CompletableFuture.supplyAsync(() -> floodOne(server));
            URI url = URI.create("ws://127.0.0.1:" + server.getLocalPort() + MuxProtocol.DEFAULT_PATH);
            TunnelConnection connection = new TunnelClient(group, Transports.best().socketChannel(),
                    MuxSettings.defaults()).connect(url, "a-token-the-fake-gateway-ignores", null,
                    Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
            long started = System.nanoTime();
            boolean closed = connection.channel().closeFuture().await(30, TimeUnit.SECONDS);
            System.out.printf("HOSTILE GATEWAY ping flood: ingress connection %s after %d ms%n",
                    closed ? "closed" : "still open", (System.nanoTime() - started) / 1_000_000);
            // Before the fix the flood is still running here; the group's shutdown below ends it.
            assertTrue(closed, "the tunnel connection is still open 30 s into a PING flood nobody reads");
            long sent = flooded.get(30, TimeUnit.SECONDS);
            System.out.printf("HOSTILE GATEWAY ping flood: %.1f MiB of PINGs sent%n", sent / 1048576.0);
            assertTrue(sent < FLOOD_LIMIT, "the flood ran to its own bound: the ingress kept reading and queueing");
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** Accepts one upgrade, answers it, then writes PINGs until the socket fails or the bound; returns bytes sent. */
    private static long floodOne(ServerSocket server) {
        try (Socket s = server.accept()) {
            s.setSoTimeout(10_000);
            String key = null;
            InputStream in = s.getInputStream();
            for (String line; !(line = readLine(in)).isEmpty(); ) {
                if (line.toLowerCase(java.util.Locale.ROOT).startsWith("sec-websocket-key:")) {
                    key = line.substring(line.indexOf(':') + 1).trim();
                }
            }
            String accept = Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-1").digest(
                    (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").getBytes(StandardCharsets.US_ASCII)));
            OutputStream out = s.getOutputStream();
            out.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Accept: " + accept + "\r\nSec-WebSocket-Protocol: " + MuxProtocol.SUBPROTOCOL
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            // The server's HTTP/2 preface (an empty SETTINGS frame) in one unmasked binary message.
            out.write(new byte[]{(byte) 0x82, 9, 0, 0, 0, 4, 0, 0, 0, 0, 0});
            // PINGs with 125-byte payloads, unmasked as a server sends them.
            byte[] ping = new byte[127];
            ping[0] = (byte) 0x89;
            ping[1] = 125;
            byte[] batch = new byte[ping.length * 256];
            for (int i = 0; i < 256; i++) {
                System.arraycopy(ping, 0, batch, i * ping.length, ping.length);
            }
            long sent = 0;
            try {
                while (sent < FLOOD_LIMIT) {
                    out.write(batch);
                    sent += batch.length;
                }
            } catch (IOException closedByTheIngress) {
                // expected once the limit closes the connection
            }
            return sent;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        for (int b; (b = in.read()) >= 0 && b != '\n'; ) {
            if (b != '\r') {
                line.append((char) b);
            }
        }
        return line.toString();
    }
}
