package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;


import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Absolute-form exchanges through a real gateway to a scripted target, seen from a raw browser socket: how decoded
 * response parts leave for the browser (the parts one read of the stream produced go out in one flush, so a small
 * response's head and body are one write, not two; a head whose body is still to come is not held back), and what
 * the browser sees when the target ends its side early: a cut-short response ends the connection, no response at
 * all is a 502 (so is a head it breaks off), a kept stream the target closed while idle is let go, not used for
 * the next request, and a bodyless GET the target dropped on a kept stream is sent once more on a fresh one. Also
 * what follows a kept exchange on the same connection: a refused request still gets its page, a CONNECT lets
 * the kept stream go, an origin-form request is closed unanswered, an answer nobody asked for on an idle kept
 * stream is dropped with that stream.
 *
 * <p>The browser connection is on its stream's event loop, as the pool's loop affinity always puts it.
 */
class UpstreamResponseTest {
    private static final String ENV = "e1";
    private final Transports transports = Transports.best();
    /** One loop for the tunnel, its streams and the browser connections, as the ingress's pools keep them. */
    private EventLoopGroup group;
    private GatewayServer gateway;
    private TunnelPool pool;
    private Channel proxy;
    private ServerSocket target;
    private Thread targetThread;
    private BrowserSession session;
    /** Per closed browser connection: how many of its flushes carried bytes. */
    private final List<Integer> dataFlushes = new CopyOnWriteArrayList<>();
    /** The target's second part of a streamed response waits for this. */
    private final CountDownLatch sendRest = new CountDownLatch(1);
    private final SimpleMeterRegistry gatewayMetrics = new SimpleMeterRegistry();
    /** Request lines the target read on a kept connection and then closed unanswered. */
    private final List<String> racedRequests = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start(@TempDir Path dir) throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        GrantIssuer issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        gateway = GatewayServer.start(GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", 0)),
                keys.verificationKeys(), null, gatewayMetrics);
        target = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        targetThread = new Thread(this::serveTarget, "upstream-response-target");
        targetThread.start();

        group = transports.newGroup(1, "upstream-response-test");
        IngressConfig config = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                java.net.URI.create(gateway.url(false)));
        String token = issuer.issueConnectionToken(ENV, Duration.ofHours(1));
        pool = new TunnelPool(new TunnelClient(group, transports.socketChannel(), MuxSettings.defaults()),
                config.gateway(), () -> token, null, 1, config.connectTimeout());
        pool.start();
        SessionRegistry sessions = new SessionRegistry();
        session = sessions.add(BrowserSession.create("upstream-test"));
        session.authorities().add(issuer.issueGrant(
                GrantSpec.tcp(ENV, "upstream-test", "127.0.0.1", target.getLocalPort()), Duration.ofMinutes(10)));
        IngressContext context = new IngressContext(config, sessions, pool, new AuditLog("ingress"));
        // ProxyServer's child options, and its pipeline (IngressFuzzAccess) below a counter of data-carrying
        // flushes at the socket end.
        proxy = new ServerBootstrap()
                .group(group)
                .channel(transports.serverSocketChannel())
                .childOption(ChannelOption.AUTO_READ, false)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ReadBuffers.relayReads(ch); // as ProxyServer does, before the first read
                        ch.pipeline().addLast("count", new DataFlushCounter());
                        IngressFuzzAccess.install(ch, context);
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    @AfterEach
    void stop() throws Exception {
        if (proxy != null) {
            proxy.close().sync();
        }
        if (pool != null) {
            // As the ingress's own stop does: a connection left to the loops' shutdown can stay open, and the
            // gateway's close would then wait its whole drain timeout for that connection's kept stream.
            pool.close();
            pool.closeConnectionsNow();
            assertTrue(pool.awaitClosed(Duration.ofSeconds(5)), "the tunnel connection closed");
        }
        if (group != null) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
        if (gateway != null) {
            gateway.close();
        }
        sendRest.countDown();
        if (target != null) {
            target.close();
        }
        if (targetThread != null) {
            targetThread.join(10_000);
        }
    }

    @Test
    void aSmallResponseLeavesInOneWrite() throws Exception {
        for (int i = 0; i < 3; i++) {
            RawProxyExchange r = RawProxyExchange.send(proxyAddress(), request("/small"));
            assertEquals(200, r.status(), r.toString());
            assertEquals("hello", r.bodyText(), r.toString());
        }
        until("three browser connections closed", Duration.ofSeconds(10), () -> dataFlushes.size() == 3);
        // The target wrote head and body in one write: one read of the stream, one flush towards the browser
        // (before, the head and the body were flushed one by one: 2 each).
        assertEquals(List.of(1, 1, 1), dataFlushes);
    }

    @Test
    void aHeadIsNotHeldBackUntilItsBodyArrives() throws Exception {
        try (Browser b = new Browser()) {
            b.send(request("/stream") + "\r\n\r\n");
            // The target sent the head and a first chunk and now waits for us: both must arrive without the rest.
            String first = b.readUntil("first\r\n");
            assertTrue(first.startsWith("HTTP/1.1 200"), first);
            sendRest.countDown();
            String rest = new String(b.readAll(), StandardCharsets.ISO_8859_1);
            assertTrue(rest.contains("second\r\n") && rest.endsWith("0\r\n\r\n"), rest);
        }
    }

    @Test
    void aResponseCutShortByTheTargetEndsTheBrowserConnection() throws Exception {
        // Content-Length 100, 5 bytes, then the target closes: the browser must see the connection end (the only
        // way HTTP/1.1 tells a client a response was cut short), not wait for 95 bytes that will never come.
        RawProxyExchange r = RawProxyExchange.send(proxyAddress(), request("/short"));
        assertEquals(200, r.status(), r.toString());
        assertEquals("short", r.bodyText(), r.toString());
    }

    @Test
    void aTargetThatClosesWithoutAnsweringIsA502() throws Exception {
        RawProxyExchange r = RawProxyExchange.send(proxyAddress(), request("/nothing"));
        assertStreamResetPage(r);
    }

    @Test
    void aKeptStreamTheTargetClosedWhileIdleIsNotUsedForTheNextRequest() throws Exception {
        // The target answered with keep-alive and then closed (as Node does after its keep-alive timeout): the
        // ingress must notice while the stream is idle and let it go.
        assertKeptStreamLetGoAndNextRequestAnswered("/keep");
    }

    @Test
    void aBodylessGetTheTargetDroppedOnAKeptStreamIsSentAgainOnAFreshOne() throws Exception {
        try (Browser b = afterAKeptExchange("/race")) {
            b.send(keepAliveRequest("/after-race") + "\r\n\r\n");
            String answer = b.readUntil("\r\n\r\nfresh");
            assertTrue(answer.startsWith("HTTP/1.1 200"), answer);
        }
        // The kept connection did take the request (and dropped it): the answer came from a second try.
        assertEquals(List.of("GET /after-race HTTP/1.1"), racedRequests);
    }

    @Test
    void aRequestWithABodyTheTargetDroppedIsNotSentAgain() throws Exception {
        try (Browser b = afterAKeptExchange("/race")) {
            // A GET, but with a body: the target may have acted on it, so the browser gets the error instead.
            b.send(keepAliveRequest("/after-race") + "\r\nContent-Length: 4\r\n\r\nbody");
            RawProxyExchange r = RawProxyExchange.parse(b.readAll());
            assertStreamResetPage(r);
        }
        assertEquals(List.of("GET /after-race HTTP/1.1"), racedRequests);
    }

    @Test
    void aHeadTheTargetBreaksOffIsA502NotAnEmptyResponse() throws Exception {
        RawProxyExchange r = RawProxyExchange.send(proxyAddress(), request("/broken-head"));
        assertStreamResetPage(r);
    }

    @Test
    void aRequestRefusedAfterAKeptExchangeStillGetsItsErrorPage() throws Exception {
        try (Browser b = afterAKeptExchange("/keep")) {
            b.send("GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\nProxy-Authorization: "
                    + RawProxyExchange.basic(session.username(), session.password()) + "\r\n\r\n");
            RawProxyExchange r = RawProxyExchange.parse(b.readAll());
            assertEquals(403, r.status(), r.toString());
            assertEquals("not_granted", r.header("ptun-error"), r.toString());
        }
    }

    @Test
    void anOriginFormRequestOnAReusedConnectionIsClosedUnanswered() throws Exception {
        // What the JDK's WebSocket client sends on a pooled proxy connection: closed like an idle keep-alive
        // connection, so that it retries on a fresh one (with CONNECT), not a 400 page it would give up on.
        try (Browser b = afterAKeptExchange("/keep")) {
            b.send("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:" + target.getLocalPort() + "\r\n\r\n");
            assertEquals(0, b.readAll().length);
        }
        // On a fresh connection the same request is a page fetching the proxy port: it gets the 400 page.
        RawProxyExchange r = RawProxyExchange.send(proxyAddress(), "GET /ws HTTP/1.1\r\nHost: 127.0.0.1");
        assertEquals(400, r.status(), r.toString());
        assertEquals("not_a_proxy_request", r.header("ptun-error"), r.toString());
    }

    @Test
    void aConnectAfterAKeptExchangeLetsTheKeptStreamGo() throws Exception {
        try (Browser b = afterAKeptExchange("/race")) { // the target keeps that connection open
            String authority = "127.0.0.1:" + target.getLocalPort();
            b.send("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\nProxy-Authorization: "
                    + RawProxyExchange.basic(session.username(), session.password()) + "\r\n\r\n");
            assertTrue(b.readUntil("\r\n\r\n").startsWith("HTTP/1.1 200"));
            // The relay's stream only: the kept one would otherwise stay open with no one to use or close it.
            until("one live stream on the gateway", Duration.ofSeconds(10),
                    () -> gatewayMetrics.get("ptun.gateway.streams.live").gauge().value() == 1);
        }
    }

    @Test
    void anAnswerNobodyAskedForOnAnIdleKeptStreamIsDroppedWithThatStream() throws Exception {
        // The target answers, then sends a 408 on the idle connection (as servers do just before they close one)
        // but keeps it open: only the ingress reading that 408 can let the stream go. The next answer the browser
        // reads must be its own request's, from a fresh stream, not the 408.
        assertKeptStreamLetGoAndNextRequestAnswered("/keep-then-408");
    }

    /**
     * After a kept exchange with {@code path}, the ingress lets that stream go while it is idle (no live stream on
     * the gateway), and the next request on the same browser connection gets its own 200 from a fresh stream.
     */
    private void assertKeptStreamLetGoAndNextRequestAnswered(String path) throws IOException {
        try (Browser b = afterAKeptExchange(path)) {
            until("the ingress let the idle stream go", Duration.ofSeconds(10),
                    () -> gatewayMetrics.get("ptun.gateway.streams.live").gauge().value() == 0);
            b.send(keepAliveRequest("/keep") + "\r\n\r\n");
            String second = b.readUntil("\r\n\r\nkept");
            assertTrue(second.startsWith("HTTP/1.1 200"), second);
        }
    }

    private static void assertStreamResetPage(RawProxyExchange r) {
        assertEquals(502, r.status(), r.toString());
        assertEquals("stream_reset", r.header("ptun-error"), r.toString());
    }

    /** A browser connection after one keep-alive exchange with {@code path} (whose answer is "kept"). */
    private Browser afterAKeptExchange(String path) throws IOException {
        Browser b = new Browser();
        b.send(keepAliveRequest(path) + "\r\n\r\n");
        String first = b.readUntil("\r\n\r\nkept");
        assertTrue(first.startsWith("HTTP/1.1 200"), first);
        return b;
    }

    /** A raw browser connection to the proxy, read with a 10 s timeout. */
    final class Browser implements AutoCloseable {
        private final Socket socket;

        Browser() throws IOException {
            socket = new Socket(proxyAddress().getAddress(), proxyAddress().getPort());
            socket.setSoTimeout(10_000);
        }

        OutputStream out() throws IOException {
            return socket.getOutputStream();
        }

        void send(String text) throws IOException {
            socket.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
        }

        String readUntil(String end) throws IOException {
            return UpstreamResponseTest.readUntil(socket.getInputStream(), end);
        }

        byte[] readAll() throws IOException {
            return socket.getInputStream().readAllBytes();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    private InetSocketAddress proxyAddress() {
        return (InetSocketAddress) proxy.localAddress();
    }

    private String request(String path) {
        return keepAliveRequest(path) + "\r\nConnection: close";
    }

    String keepAliveRequest(String path) {
        String authority = "127.0.0.1:" + target.getLocalPort();
        return "GET http://" + authority + path + " HTTP/1.1\r\nHost: " + authority + "\r\n"
                + "Proxy-Authorization: " + RawProxyExchange.basic(session.username(), session.password());
    }

    private static String readUntil(InputStream in, String end) throws IOException {
        ByteArrayOutputStream seen = new ByteArrayOutputStream();
        while (!seen.toString(StandardCharsets.ISO_8859_1).endsWith(end)) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed before '" + end.trim() + "': " + seen.toString(StandardCharsets.ISO_8859_1));
            }
            seen.write(b);
        }
        return seen.toString(StandardCharsets.ISO_8859_1);
    }

    /**
     * The target, one request per connection, closing it after the answer: a small response in one write, a chunked
     * one in two parts with a pause between them, one cut short, a keep-alive one (closed all the same), or none.
     */
    private void serveTarget() {
        while (!target.isClosed()) {
            try (Socket c = target.accept()) {
                String head = readUntil(c.getInputStream(), "\r\n\r\n");
                OutputStream out = c.getOutputStream();
                if (head.startsWith("GET /small ")) {
                    out.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
                            .getBytes(StandardCharsets.ISO_8859_1));
                } else if (head.startsWith("GET /short ")) {
                    out.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"
                            .getBytes(StandardCharsets.ISO_8859_1));
                } else if (head.startsWith("GET /keep ")) {
                    out.write("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkept"
                            .getBytes(StandardCharsets.ISO_8859_1));
                } else if (head.startsWith("GET /race ")) {
                    // Keep-alive's race made deterministic: answer, then take the next request and close unanswered.
                    out.write("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkept"
                            .getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    racedRequests.add(readUntil(c.getInputStream(), "\r\n\r\n").split("\r\n")[0]);
                    continue;
                } else if (head.startsWith("GET /keep-then-408 ")) {
                    out.write(("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkept"
                            + "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
                            .getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    c.getInputStream().readAllBytes(); // open until the other side closes
                    continue;
                } else if (head.startsWith("GET /after-race ")) {
                    out.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh"
                            .getBytes(StandardCharsets.ISO_8859_1));
                } else if (head.startsWith("GET /broken-head ")) {
                    out.write("HTTP/1.1 200 OK\r\nX-Partial: y\r\n".getBytes(StandardCharsets.ISO_8859_1));
                } else if (head.startsWith("GET /nothing ")) {
                    continue; // closed unanswered
                } else {
                    out.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n"
                            .getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    sendRest.await(10, TimeUnit.SECONDS);
                    out.write("6\r\nsecond\r\n0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                }
                out.flush();
            } catch (IOException e) {
                // closed at the end of the test, or a connection the test gave up on
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Counts the flushes that carried bytes to the socket since the previous flush; records them when the connection closes. */
    private final class DataFlushCounter extends ChannelDuplexHandler {
        private boolean unflushedBytes;
        private int count;

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof ByteBuf buf && buf.isReadable()) {
                unflushedBytes = true;
            }
            ctx.write(msg, promise);
        }

        @Override
        public void flush(ChannelHandlerContext ctx) {
            if (unflushedBytes) {
                count++;
                unflushedBytes = false;
            }
            ctx.flush();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            dataFlushes.add(count);
            ctx.fireChannelInactive();
        }
    }
}
