package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.sampleapp.RawEchoServer;
import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 1: an authenticated tunnel peer that provokes answers (WebSocket PONGs, HTTP/2 PING and SETTINGS
 * ACKs) and never reads them. The real gateway runs in a child JVM with a 64 MiB heap and the shipped flags; the
 * flooder is a raw socket with a 4 KiB receive buffer that never reads after the upgrade. The gateway must close the
 * flooding connection, stay alive, and still carry an honest client's stream. Memory figures are printed
 * ({@code FLOOD ...}) for docs/security.md.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class AnswerFloodTest {
    private static final String ENV = "env-flood";
    private static final Duration FLOOD_BOUND = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    private GatewayProcess gateway;
    private RawEchoServer echo;
    private EventLoopGroup group;
    private GrantIssuer issuer;
    private String token;

    @BeforeEach
    void start() throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        token = issuer.issueConnectionToken(ENV, Duration.ofHours(1));
        echo = RawEchoServer.start("127.0.0.1", 0);
        group = Transports.best().newGroup(1, "flood-test-client");
        gateway = GatewayProcess.start(dir, dir.resolve("keys"), ENV, java.util.List.of("-Xmx64m"));
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (gateway != null) {
                gateway.close();
            }
        } finally {
            if (echo != null) {
                echo.close();
            }
            if (group != null) {
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            }
        }
    }

    @Test
    void webSocketPingsNeverRead() throws Exception {
        // Empty masked PINGs: 6 bytes each on the wire, each answered by a PONG the peer never reads.
        byte[] ping = {(byte) 0x89, (byte) 0x80, 0, 0, 0, 0};
        floodAndCheck("ws-ping", new byte[0], repeat(ping, 2000));
    }

    @Test
    void http2PingsNeverRead() throws Exception {
        byte[] ping = {0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
        floodAndCheck("h2-ping", binaryMessage(http2Preface()), binaryMessage(repeat(ping, 900)));
    }

    @Test
    void http2SettingsNeverRead() throws Exception {
        byte[] settings = {0, 0, 0, 4, 0, 0, 0, 0, 0};
        floodAndCheck("h2-settings", binaryMessage(http2Preface()), binaryMessage(repeat(settings, 1700)));
    }

    private void floodAndCheck(String name, byte[] preface, byte[] unit) throws Exception {
        honestExchange(); // the gateway works, and its code paths are warm
        long baselineKib = gateway.statusKib("VmRSS");
        long started = System.nanoTime();
        try (Flooder flooder = Flooder.start(gateway.port(), token, preface, unit)) {
            long peakKib = gateway.peakRssKibUntil(flooder.ended, started, FLOOD_BOUND, baselineKib);
            Duration took = GatewayProcess.elapsedSince(started);
            // A gateway that ran out of memory exits (the shipped flags): give it a moment to do so.
            boolean alive = !gateway.process.waitFor(1, TimeUnit.SECONDS);
            System.out.printf("FLOOD %s: connection %s after %d ms, %.1f MiB sent; gateway RSS %d MiB before, "
                            + "peak %d MiB during (VmHWM %d MiB); gateway %s; closed by the backlog limit: %s%n", name,
                    flooder.ended.isDone() ? "ended" : "still open", took.toMillis(), flooder.sent / 1048576.0,
                    baselineKib >> 10, peakKib >> 10, gateway.statusKib("VmHWM") >> 10,
                    alive ? "alive" : "exited " + gateway.process.exitValue(), tail(gateway).contains("bytes unread"));
            assertTrue(alive, () -> "the gateway died under the flood (exit " + gateway.process.exitValue()
                    + "); stderr: " + tail(gateway));
            assertTrue(flooder.ended.isDone(), "the flooding connection is still open after " + FLOOD_BOUND);
        }
        long honest = System.nanoTime();
        honestExchange();
        assertTrue(GatewayProcess.elapsedSince(honest).compareTo(Duration.ofSeconds(10)) < 0);
        assertTrue(gateway.process.isAlive());
    }

    /** A well-behaved ingress: connects, opens a granted stream, sends bytes, gets the echo's count back. */
    private void honestExchange() throws Exception {
        HonestClient.exchange(group, gateway, token, issuer, ENV, echo.port());
    }

    private static String tail(GatewayProcess p) {
        String err;
        try {
            err = p.stderr();
        } catch (IOException e) {
            return e.toString();
        }
        return err.length() > 3000 ? err.substring(err.length() - 3000) : err;
    }

    private static byte[] http2Preface() {
        byte[] magic = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
        byte[] settings = {0, 0, 0, 4, 0, 0, 0, 0, 0};
        byte[] out = new byte[magic.length + settings.length];
        System.arraycopy(magic, 0, out, 0, magic.length);
        System.arraycopy(settings, 0, out, magic.length, settings.length);
        return out;
    }

    /** One masked binary WebSocket message (mask key 0, so the payload is sent as is); payload under 64 KiB. */
    static byte[] binaryMessage(byte[] payload) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0x82);
        if (payload.length < 126) {
            out.write(0x80 | payload.length);
        } else {
            out.write(0x80 | 126);
            out.write(payload.length >> 8);
            out.write(payload.length & 0xff);
        }
        out.writeBytes(new byte[4]);
        out.writeBytes(payload);
        return out.toByteArray();
    }

    static byte[] repeat(byte[] unit, int times) {
        byte[] out = new byte[unit.length * times];
        for (int i = 0; i < times; i++) {
            System.arraycopy(unit, 0, out, i * unit.length, unit.length);
        }
        return out;
    }

    /**
     * An authenticated tunnel peer that upgrades, then writes {@code preface} once and {@code unit} for ever, and
     * never reads again (4 KiB receive buffer). {@link #ended} completes when a write fails: the gateway closed it.
     */
    static final class Flooder implements AutoCloseable {
        final Socket socket = new Socket();
        final CompletableFuture<Throwable> ended = new CompletableFuture<>();
        volatile long sent;

        static Flooder start(int port, String token, byte[] preface, byte[] unit) throws IOException {
            Flooder f = new Flooder();
            upgrade(f.socket, port, token);
            OutputStream out = f.socket.getOutputStream();
            Thread writer = new Thread(() -> {
                try {
                    out.write(preface);
                    while (true) {
                        out.write(unit);
                        f.sent += unit.length;
                    }
                } catch (IOException | RuntimeException e) {
                    f.ended.complete(e);
                }
            }, "flooder");
            writer.setDaemon(true);
            writer.start();
            return f;
        }

        /** Connects {@code socket} (4 KiB receive buffer) and upgrades it with {@code token}; reads nothing after. */
        static void upgrade(Socket socket, int port, String token) throws IOException {
            socket.setReceiveBufferSize(4096);
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(("GET " + MuxProtocol.DEFAULT_PATH + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n"
                    + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " + MuxProtocol.SUBPROTOCOL + "\r\n"
                    + MuxProtocol.TOKEN_HEADER + ": " + MuxProtocol.TOKEN_SCHEME + token + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String head = readHead(socket.getInputStream());
            if (!head.startsWith("HTTP/1.1 101")) {
                socket.close();
                throw new AssertionError("upgrade refused: " + head.lines().findFirst().orElse(""));
            }
        }

        /** The response head, byte by byte (nothing after it is read). */
        private static String readHead(InputStream in) throws IOException {
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

        @Override
        public void close() throws IOException {
            socket.close(); // unblocks the writer if the gateway never closed
        }
    }
}
