package dev.previewtunnel.ingress.hostile;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayLimits;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.local.audit.AuditLog;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 10: every stream the ingress opens, whatever it carries and however it ends, gets exactly one
 * {@code stream_opened} and one {@code stream_closed} audit line (paired by id, with byte counts and why), on the
 * gateway too, and the session's live stream count (what {@code status} shows) returns to zero. Real sockets:
 * an in-process ingress and gateway, a scripted target on loopback, raw browser sockets.
 */
@Timeout(60)
class StreamBookkeepingTest {
    private static final String ENV = "e1";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration WAIT = Duration.ofSeconds(15);

    private GatewayServer gateway;
    private Ingress ingress;
    private ServerSocket target;
    private Thread acceptor;
    private final List<Socket> targetSockets = new CopyOnWriteArrayList<>();
    private BrowserSession session;
    private String auth;
    private final Capture audit = new Capture();
    /** "hold" mode: the target saw the browser's end, and waits for this before ending its own. */
    private final java.util.concurrent.CountDownLatch targetSawEnd = new java.util.concurrent.CountDownLatch(1);
    private final java.util.concurrent.CountDownLatch releaseTarget = new java.util.concurrent.CountDownLatch(1);

    @BeforeEach
    void start(@TempDir Path dir, org.junit.jupiter.api.TestInfo test) throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        GrantIssuer issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        GatewayConfig config = GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", 0));
        if (test.getDisplayName().contains("IdleTimeout")) {
            GatewayLimits d = GatewayLimits.defaults();
            config = config.withLimits(new GatewayLimits(d.streamsPerSession(), d.opensPerSecond(), d.openBurst(),
                    d.pendingDialsPerConnection(), Duration.ofSeconds(1), d.connectionIdleTimeout(),
                    d.queuedBytesPerConnection()));
        }
        gateway = GatewayServer.start(config, keys.verificationKeys(), null, new io.micrometer.core.instrument.simple.SimpleMeterRegistry());
        target = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        acceptor = new Thread(this::accept, "bookkeeping-target");
        acceptor.setDaemon(true);
        acceptor.start();
        String token = issuer.issueConnectionToken(ENV, Duration.ofHours(1));
        ingress = Ingress.start(IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create(gateway.url(false))), () -> token, null);
        session = ingress.sessions().add(BrowserSession.create("books"));
        session.authorities().add(issuer.issueGrant(
                GrantSpec.tcp(ENV, "books", "127.0.0.1", target.getLocalPort()), Duration.ofMinutes(10)));
        auth = "Basic " + Base64.getEncoder().encodeToString(
                (session.username() + ":" + session.password()).getBytes(StandardCharsets.UTF_8));
        ingress.firstConnection().sync();
    }

    @AfterEach
    void stop() throws Exception {
        releaseTarget.countDown();
        audit.close();
        if (ingress != null) {
            ingress.close();
        }
        if (gateway != null) {
            gateway.close();
        }
        if (target != null) {
            target.close();
        }
        for (Socket s : targetSockets) {
            s.close();
        }
        if (acceptor != null) {
            acceptor.join(5_000);
        }
    }

    // ---------------------------------------------------------------- CONNECT relays

    @Test
    void connectRelayTheBrowserCloses() throws Exception {
        try (Socket b = connect()) {
            send(b, "ping");
            assertEquals("ping", read(b, 4));
            abort(b);
        }
        JsonNode closed = assertBalanced(1, "connect");
        assertEquals("browser_closed", closed.path("why").asText(), closed.toString());
        assertEquals(4, closed.path("bytesToTarget").asLong(), closed.toString());
        assertEquals(4, closed.path("bytesFromTarget").asLong(), closed.toString());
    }

    @Test
    void connectRelayTheTargetCloses() throws Exception {
        try (Socket b = connect()) {
            send(b, "bye!");
            assertEquals("bye!", read(b, 4));
            assertEquals(-1, b.getInputStream().read(), "the target's FIN reached the browser");
            b.shutdownOutput(); // as a browser does once its peer ended: the relay finishes cleanly
            assertBalanced(1, "connect");
        }
        JsonNode closed = closedLines().get(0);
        assertTrue(List.of("completed", "target_closed").contains(closed.path("why").asText()), closed.toString());
    }

    @Test
    void connectRelayTheBrowserHalfClosesAndTheTargetAnswersWithItsEnd() throws Exception {
        try (Socket b = connect()) {
            send(b, "ping");
            assertEquals("ping", read(b, 4));
            b.shutdownOutput(); // the target ends its side when it sees ours ended
            assertEquals(-1, b.getInputStream().read());
            JsonNode closed = assertBalanced(1, "connect");
            assertEquals("completed", closed.path("why").asText(), closed.toString());
        }
    }

    /**
     * What Chromium does when a tab with an HMR socket closes, in the order that left the browser connection open
     * for good: the browser ends its side, then resets; only then does the target end its side, and the FIN the
     * relay then owes the browser cannot be sent. The connection must close (and leave the session's count).
     */
    @Test
    void connectRelayTheBrowserResetsBeforeTheTargetsEndArrives() throws Exception {
        try (Socket b = connect()) {
            send(b, "hold");
            assertEquals("hold", read(b, 4));
            b.shutdownOutput();
            assertTrue(targetSawEnd.await(15, java.util.concurrent.TimeUnit.SECONDS), "the target saw our end");
            abort(b);
            releaseTarget.countDown(); // the target ends its side now
            assertBalanced(1, "connect");
        }
    }

    @Test
    void connectRelayEndedByClosingTheSession() throws Exception {
        try (Socket b = connect()) {
            send(b, "ping");
            assertEquals("ping", read(b, 4));
            session.closeAll();
            assertEquals(-1, b.getInputStream().read());
            JsonNode closed = assertBalanced(1, "connect");
            assertEquals(BrowserSession.SESSION_CLOSED, closed.path("why").asText(), closed.toString());
        }
    }

    @Test
    void connectRelayEndedByDetachingItsGrant() throws Exception {
        try (Socket b = connect()) {
            send(b, "ping");
            assertEquals("ping", read(b, 4));
            session.detachGrant(session.authorities().entries().get(0).grantId());
            assertEquals(-1, b.getInputStream().read());
            JsonNode closed = assertBalanced(1, "connect");
            assertEquals(BrowserSession.GRANT_DETACHED, closed.path("why").asText(), closed.toString());
        }
    }

    @Test
    void connectRelayEndedByRevocationAtTheGateway() throws Exception {
        try (Socket b = connect()) {
            send(b, "ping");
            assertEquals("ping", read(b, 4));
            gateway.revocations().revokeSession("books");
            assertEquals(-1, readOrReset(b));
            JsonNode closed = assertBalanced(1, "connect");
            assertEquals("reset", closed.path("why").asText(), closed.toString());
            JsonNode atGateway = audit.matching("gateway", "stream_closed").get(0);
            assertEquals("revoked", atGateway.path("why").asText(), atGateway.toString());
        }
    }

    @Test
    void connectRelayEndedByTheGatewaysStreamIdleTimeout() throws Exception {
        try (Socket b = connect()) {
            send(b, "ping");
            assertEquals("ping", read(b, 4));
            // Nothing more either way: the gateway resets the stream after its 1 s idle timeout.
            assertEquals(-1, readOrReset(b));
            JsonNode closed = assertBalanced(1, "connect");
            assertEquals("reset", closed.path("why").asText(), closed.toString());
            JsonNode atGateway = audit.matching("gateway", "stream_closed").get(0);
            assertEquals("idle", atGateway.path("why").asText(), atGateway.toString());
        }
    }

    @Test
    void manyRelaysClosedAtOnceAllBalance() throws Exception {
        int n = 30;
        Socket[] sockets = new Socket[n];
        for (int i = 0; i < n; i++) {
            sockets[i] = connect();
            send(sockets[i], "ping");
        }
        for (Socket s : sockets) {
            assertEquals("ping", read(s, 4));
        }
        until("30 streams live", WAIT, () -> session.liveStreams() == n);
        for (Socket s : sockets) {
            s.close();
        }
        assertBalanced(n, "connect");
    }

    // ---------------------------------------------------------------- absolute-form exchanges

    @Test
    void httpStreamKeptForTheNextRequestIsOneStream() throws Exception {
        try (Socket b = proxySocket()) {
            send(b, get("/a", false));
            assertTrue(readResponse(b).startsWith("HTTP/1.1 200"));
            send(b, get("/b", false));
            assertTrue(readResponse(b).startsWith("HTTP/1.1 200"));
            until("one stream live", WAIT, () -> session.liveStreams() == 1);
            abort(b);
        }
        JsonNode closed = assertBalanced(1, "http");
        assertEquals("browser_closed", closed.path("why").asText(), closed.toString());
        assertTrue(closed.path("bytesToTarget").asLong() > 0 && closed.path("bytesFromTarget").asLong() > 0,
                closed.toString());
    }

    @Test
    void httpStreamNotKeptIsReleased() throws Exception {
        try (Socket b = proxySocket()) {
            send(b, get("/close", false));
            assertTrue(readResponse(b).startsWith("HTTP/1.1 200"));
            // The target's stream ends with its answer; the browser connection stays for the next request.
            until("the stream closed", WAIT, () -> closedLines().size() == 1 && session.liveStreams() == 0);
            JsonNode closed = closedLines().get(0);
            assertTrue(List.of("target_closed", "released", "completed").contains(closed.path("why").asText()),
                    closed.toString());
        }
        assertBalanced(1, "http");
    }

    @Test
    void httpRetryOnAFreshStreamIsTwoStreams() throws Exception {
        try (Socket b = proxySocket()) {
            send(b, get("/a", false));
            assertTrue(readResponse(b).startsWith("HTTP/1.1 200"));
            send(b, get("/drop", false)); // the target drops the kept connection unanswered: sent again
            assertTrue(readResponse(b).startsWith("HTTP/1.1 200"));
        }
        assertBalanced(2, "http");
    }

    @Test
    void httpUpgradeTurnedRawIsOneStream() throws Exception {
        try (Socket b = proxySocket()) {
            send(b, get("/ws", true));
            String head = readHead(b);
            assertTrue(head.startsWith("HTTP/1.1 101"), head);
            send(b, "ping");
            assertEquals("ping", read(b, 4));
            abort(b);
        }
        JsonNode closed = assertBalanced(1, "http");
        assertEquals("browser_closed", closed.path("why").asText(), closed.toString());
    }

    @Test
    void aRefusalOpensNoStream() throws Exception {
        try (Socket b = proxySocket()) {
            send(b, "GET http://localhost:1/ HTTP/1.1\r\nHost: localhost:1\r\nProxy-Authorization: " + auth
                    + "\r\n\r\n");
            assertTrue(readResponse(b).startsWith("HTTP/1.1 403"));
        }
        until("the refusal audited", WAIT, () -> !audit.matching("ingress", "request_refused").isEmpty());
        assertEquals(0, audit.matching("ingress", "stream_opened").size());
        assertEquals(0, audit.matching("ingress", "stream_closed").size());
    }

    @Test
    void tunnelConnectionLostEndsAndCountsTheStream() throws Exception {
        try (Socket b = connect()) {
            send(b, "ping");
            assertEquals("ping", read(b, 4));
            gateway.close();
            gateway = null;
            assertEquals(-1, readOrReset(b));
            until("one stream_closed", WAIT, () -> closedLines().size() == 1);
            until("no live stream", WAIT, () -> session.liveStreams() == 0);
            JsonNode closed = closedLines().get(0);
            assertTrue(List.of("tunnel_lost", "reset").contains(closed.path("why").asText()), closed.toString());
        }
    }

    // ---------------------------------------------------------------- helpers

    /**
     * Waits until the ingress wrote {@code n} stream_closed lines, each paired by id with one stream_opened of
     * {@code kind}, the gateway as many of each, and the session counts no live stream. Returns the last line.
     */
    private JsonNode assertBalanced(int n, String kind) {
        until(n + " ingress stream_closed lines", WAIT, () -> closedLines().size() >= n);
        until("no live stream in the session", WAIT, () -> session.liveStreams() == 0);
        until("no live browser connection in the session", WAIT, () -> session.liveConnections() == 0);
        until(n + " gateway stream_closed lines", WAIT,
                () -> audit.matching("gateway", "stream_closed").size() >= n);
        List<JsonNode> opened = audit.matching("ingress", "stream_opened");
        List<JsonNode> closed = closedLines();
        assertEquals(n, opened.size(), "stream_opened lines: " + opened);
        assertEquals(n, closed.size(), "stream_closed lines: " + closed);
        Map<String, Integer> ids = new HashMap<>();
        opened.forEach(o -> {
            assertEquals(kind, o.path("kind").asText(), o.toString());
            ids.merge(o.path("stream").asText(), 1, Integer::sum);
        });
        closed.forEach(c -> {
            assertEquals(1, ids.getOrDefault(c.path("stream").asText(), 0), "paired with one opened: " + c);
            assertTrue(c.has("bytesToTarget") && c.has("bytesFromTarget") && c.has("why"), c.toString());
        });
        assertEquals(n, ids.size(), "distinct stream ids");
        assertEquals(n, audit.matching("gateway", "stream_opened").size());
        assertEquals(n, audit.matching("gateway", "stream_closed").size());
        audit.matching("gateway", "stream_closed").forEach(c -> assertTrue(List.of("completed", "target_closed",
                "ingress_closed", "tunnel_lost", "revoked", "idle").contains(c.path("why").asText()), c.toString()));
        assertEquals(0, session.liveStreams());
        return closed.get(closed.size() - 1);
    }

    private List<JsonNode> closedLines() {
        return audit.matching("ingress", "stream_closed");
    }

    private Socket proxySocket() throws IOException {
        Socket s = new Socket();
        s.connect(ingress.proxyAddress(), 5_000);
        s.setSoTimeout(15_000);
        return s;
    }

    private Socket connect() throws IOException {
        Socket s = proxySocket();
        String authority = "127.0.0.1:" + target.getLocalPort();
        send(s, "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\nProxy-Authorization: " + auth
                + "\r\n\r\n");
        String head = readHead(s);
        assertTrue(head.startsWith("HTTP/1.1 200"), head);
        return s;
    }

    private String get(String path, boolean upgrade) {
        String authority = "127.0.0.1:" + target.getLocalPort();
        return "GET http://" + authority + path + " HTTP/1.1\r\nHost: " + authority + "\r\nProxy-Authorization: "
                + auth + "\r\n" + (upgrade ? "Connection: Upgrade\r\nUpgrade: websocket\r\n" : "") + "\r\n";
    }

    private static void send(Socket s, String text) throws IOException {
        s.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().flush();
    }

    private static String read(Socket s, int n) throws IOException {
        return new String(s.getInputStream().readNBytes(n), StandardCharsets.ISO_8859_1);
    }

    /** Closes with a reset (as a browser dropping a connection may), so the browser's side ends first. */
    private static void abort(Socket s) throws IOException {
        s.setSoLinger(true, 0);
        s.close();
    }

    private static int readOrReset(Socket s) throws IOException {
        try {
            return s.getInputStream().read();
        } catch (SocketException reset) {
            return -1;
        }
    }

    private static String readHead(Socket s) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        InputStream in = s.getInputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int c = in.read();
            if (c < 0) {
                break;
            }
            head.write(c);
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }

    /** A head and its Content-Length body. */
    private static String readResponse(Socket s) throws IOException {
        String head = readHead(s);
        int length = 0;
        for (String line : head.split("\r\n")) {
            if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        return head + read(s, length);
    }

    // ---------------------------------------------------------------- the scripted target

    private void accept() {
        while (!target.isClosed()) {
            try {
                Socket s = target.accept();
                targetSockets.add(s);
                Thread t = new Thread(() -> serve(s), "bookkeeping-target-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException closed) {
                return;
            }
        }
    }

    /**
     * HTTP when the first bytes are a request (200 "ok", kept; /close closes after; /drop on a kept connection is
     * read and dropped unanswered; an upgrade gets 101 and then echo), else echo: "bye!" is echoed and the
     * connection closed, the browser's end is answered with the target's end.
     */
    private void serve(Socket s) {
        try (s) {
            InputStream in = s.getInputStream();
            OutputStream out = s.getOutputStream();
            byte[] first = new byte[4];
            int got = in.readNBytes(first, 0, 4);
            if (got < 4) {
                return;
            }
            String start = new String(first, StandardCharsets.ISO_8859_1);
            if (!start.equals("GET ")) {
                echo(start, in, out);
                return;
            }
            int served = 0;
            String head = start + readHeadFrom(in);
            while (true) {
                if (head.contains("Upgrade: websocket")) {
                    out.write("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
                            .getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    echo("", in, out);
                    return;
                }
                if (head.startsWith("GET /drop") && served > 0) {
                    return; // the keep-alive race: read, then closed unanswered
                }
                boolean close = head.startsWith("GET /close");
                out.write(("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + (close ? "Connection: close\r\n" : "")
                        + "\r\nok").getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
                served++;
                if (close) {
                    return;
                }
                head = readHeadFrom(in);
                if (head.isEmpty()) {
                    return;
                }
            }
        } catch (IOException e) {
            // the other side went away
        }
    }

    private void echo(String already, InputStream in, OutputStream out) throws IOException {
        StringBuilder seen = new StringBuilder(already);
        if (!already.isEmpty()) {
            out.write(already.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
        }
        byte[] buf = new byte[8192];
        while (!seen.toString().contains("bye!")) {
            int n = in.read(buf);
            if (n < 0) {
                if (seen.toString().contains("hold")) {
                    targetSawEnd.countDown();
                    try {
                        releaseTarget.await(15, java.util.concurrent.TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return; // the browser ended: so does the target (closing the socket)
            }
            out.write(buf, 0, n);
            out.flush();
            seen.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
            if (seen.length() > 64) {
                seen.delete(0, seen.length() - 8);
            }
        }
    }

    private static String readHeadFrom(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int c = in.read();
            if (c < 0) {
                return "";
            }
            head.write(c);
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }

    /** The ptun.audit lines written while the test runs. */
    private static final class Capture extends AppenderBase<ILoggingEvent> implements AutoCloseable {
        private final List<JsonNode> lines = new CopyOnWriteArrayList<>();
        private final Logger logger = (Logger) LoggerFactory.getLogger(AuditLog.LOGGER);

        Capture() {
            setContext(logger.getLoggerContext());
            start();
            logger.addAppender(this);
        }

        @Override
        protected void append(ILoggingEvent event) {
            try {
                lines.add(JSON.readTree(event.getFormattedMessage()));
            } catch (IOException e) {
                // not a JSON line
            }
        }

        List<JsonNode> matching(String side, String event) {
            return lines.stream().filter(n -> side.equals(n.path("side").asText())
                    && event.equals(n.path("event").asText())).toList();
        }

        @Override
        public void close() {
            logger.detachAppender(this);
            stop();
        }
    }
}
