package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.testing.SharedLoopChannel;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.local.audit.AuditLog;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.testing.SharedLoopChannel.ascii;
import static dev.previewtunnel.testing.SharedLoopChannel.sentText;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One {@link ProxyExchange} between an {@link EmbeddedChannel} browser (no codec: the exchange's response objects
 * are read back as written) and an {@link EmbeddedChannel} upstream on the browser's loop (the {@link Upstream}'s
 * HTTP client codec encodes the request and decodes the scripted response bytes). Request-body backpressure,
 * response forwarding, retry-once only when nothing was answered, a second exchange starting fresh, and a kept
 * upstream reused only for the same kind of route (direct or tunnelled) and target. Opens of a fresh stream go to a
 * pool that was never started, direct dials to a resolver that knows no name; both answer unreachable at once.
 */
class ProxyExchangeTest {
    private static final Authority TARGET = new Authority("127.0.0.1", 5173);
    private static final Route ROUTE = new Route(TARGET, TARGET, "grant-a", "jti-a", "e1");

    private EventLoopGroup idle;
    private IngressContext context;
    private BrowserSession session;
    private EmbeddedChannel browser;
    private final List<Object> owned = new ArrayList<>();
    private final List<EmbeddedChannel> upstreams = new ArrayList<>();
    private int browserReads;
    private final RecordingOwner owner = new RecordingOwner();

    private static final class RecordingOwner implements ProxyExchange.Owner {
        Upstream kept;
        int finished;
        int closed;

        @Override
        public void finished(Upstream keep) {
            finished++;
            kept = keep;
        }

        @Override
        public RelaySwitch switching() {
            throw new AssertionError("no upgrade here");
        }

        @Override
        public void closed() {
            closed++;
        }
    }

    @BeforeEach
    void setUp() {
        idle = Transports.best().newGroup(1, "exchange-test-idle");
        IngressConfig config = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create("ws://127.0.0.1:1/"));
        TunnelPool neverStarted = new TunnelPool(new TunnelClient(idle, Transports.best().socketChannel(),
                MuxSettings.defaults()), config.gateway(), () -> "unused", null, 1, config.connectTimeout());
        // Direct opens fail at once too: no name resolves (no test dials out).
        DirectDialer noDns = new DirectDialer(Transports.best().socketChannel(), Runnable::run, Duration.ofSeconds(5),
                host -> {
                    throw new UnknownHostException(host);
                });
        context = new IngressContext(config, new SessionRegistry(), neverStarted, new AuditLog("ingress"), noDns);
        session = BrowserSession.create("exchange-test");
        browser = new EmbeddedChannel(new ChannelOutboundHandlerAdapter() {
            @Override
            public void read(ChannelHandlerContext ctx) {
                browserReads++;
                ctx.read();
            }
        });
        browser.config().setAutoRead(false);
        browserReads = 0;
    }

    @AfterEach
    void tearDown() {
        owned.forEach(ReferenceCountUtil::release);
        upstreams.forEach(EmbeddedChannel::finishAndReleaseAll);
        Object o;
        while ((o = browser.readOutbound()) != null) {
            ReferenceCountUtil.release(o);
        }
        browser.finishAndReleaseAll();
        idle.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private EmbeddedChannel upstreamChannel() {
        EmbeddedChannel up = SharedLoopChannel.stream(browser.eventLoop());
        upstreams.add(up);
        return up;
    }

    private Upstream keptUpstream(EmbeddedChannel upstreamChannel) {
        return keptUpstream(upstreamChannel, ROUTE);
    }

    private Upstream keptUpstream(EmbeddedChannel upstreamChannel, Route route) {
        return new Upstream(upstreamChannel, route, browser);
    }

    private ProxyExchange exchange(HttpMethod method, String path, Route route) {
        HttpRequest req = new DefaultHttpRequest(HttpVersion.HTTP_1_1, method, "http://" + route.requested() + path);
        if (HttpMethod.POST.equals(method)) {
            req.headers().set(HttpHeaderNames.CONTENT_LENGTH, 10);
        }
        return new ProxyExchange(context, browser, owner, session, route, req, path, false);
    }

    /** Starts an exchange on a kept upstream over {@code up} and sends its whole request (body parts, then end). */
    private String sentOnKept(EmbeddedChannel up, HttpMethod method, String path, String... body) {
        return sentOn(keptUpstream(up), ROUTE, method, path, body);
    }

    /** Starts an exchange for {@code route} offered {@code kept} and sends its whole request; what {@code kept} got. */
    private String sentOn(Upstream kept, Route route, HttpMethod method, String path, String... body) {
        EmbeddedChannel up = (EmbeddedChannel) kept.channel;
        ProxyExchange exchange = exchange(method, path, route);
        exchange.start(kept);
        for (String part : body) {
            exchange.onBrowserPart(new DefaultHttpContent(ascii(part)));
        }
        exchange.onBrowserPart(LastHttpContent.EMPTY_LAST_CONTENT);
        exchange.onBrowserReadComplete();
        return sentText(up);
    }

    /** The upstream closes; the first thing the browser then gets is a page with this {@code ptun-error} code. */
    private void assertClosingAnswers(EmbeddedChannel up, String code) {
        up.close();
        runTasks(up);
        HttpResponse page = assertInstanceOf(HttpResponse.class, received().get(0));
        assertEquals(code, page.headers().get(MuxProtocol.ERROR_HEADER));
    }

    /** What the browser was sent, each object kept for release after the test. */
    private List<Object> received() {
        List<Object> out = new ArrayList<>();
        Object o;
        while ((o = browser.readOutbound()) != null) {
            out.add(o);
            owned.add(o);
        }
        return out;
    }

    private void runTasks(EmbeddedChannel upstream) {
        for (int i = 0; i < 3; i++) {
            browser.runPendingTasks();
            upstream.runPendingTasks();
        }
    }

    @Test
    void theBrowserIsNotReadWhileTheUpstreamIsUnwritable() {
        EmbeddedChannel up = upstreamChannel();
        ProxyExchange exchange = exchange(HttpMethod.POST, "/upload", ROUTE);
        exchange.start(keptUpstream(up));
        exchange.onBrowserPart(new DefaultHttpContent(ascii("hello")));
        up.unsafe().outboundBuffer().setUserDefinedWritability(1, false);
        runTasks(up);
        int before = browserReads;
        exchange.onBrowserReadComplete();
        assertEquals(before, browserReads, "no browser read while the upstream is unwritable");

        up.unsafe().outboundBuffer().setUserDefinedWritability(1, true);
        runTasks(up); // the writability change is announced by a task on the (shared) loop
        assertEquals(before + 1, browserReads, "read on once the upstream turned writable");
        exchange.onBrowserPart(new DefaultHttpContent(ascii("world")));
        exchange.onBrowserPart(LastHttpContent.EMPTY_LAST_CONTENT);
        exchange.onBrowserReadComplete();
        assertEquals(before + 1, browserReads, "nothing more read once the request ended");
        String wire = sentText(up);
        assertTrue(wire.startsWith("POST /upload HTTP/1.1\r\n"), wire);
        assertTrue(wire.endsWith("\r\n\r\nhelloworld"), wire);
    }

    @Test
    void aResponseIsForwardedAndTheKeptUpstreamHandedBack() {
        EmbeddedChannel up = upstreamChannel();
        assertTrue(sentOnKept(up, HttpMethod.GET, "/page").startsWith("GET /page HTTP/1.1\r\n"));

        up.writeInbound(ascii("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nKeep-Alive: timeout=5\r\n\r\nhi"));
        List<Object> out = received();
        HttpResponse head = assertInstanceOf(HttpResponse.class, out.get(0));
        assertEquals(200, head.status().code());
        assertNull(head.headers().get("Keep-Alive"), "hop-by-hop headers removed");
        assertEquals("hi", ((HttpContent) out.get(out.size() - 1)).content().toString(StandardCharsets.US_ASCII));
        assertInstanceOf(LastHttpContent.class, out.get(out.size() - 1));
        assertEquals(1, owner.finished);
        assertSame(up, owner.kept.channel, "a keep-alive upstream is kept for the next request");
        assertTrue(up.isActive());
    }

    @Test
    void aBodylessGetTheKeptUpstreamDroppedUnansweredIsSentAgainOnAFreshStream() {
        EmbeddedChannel up = upstreamChannel();
        sentOnKept(up, HttpMethod.GET, "/");
        // Retried: the fresh open (a never-started pool) is what answers, not the dropped stream.
        assertClosingAnswers(up, "gateway_unreachable");
        assertEquals(1, owner.closed);
    }

    @Test
    void aGetWhoseAnswerHadBegunIsNotSentAgain() {
        EmbeddedChannel up = upstreamChannel();
        sentOnKept(up, HttpMethod.GET, "/");
        up.writeInbound(ascii("HTTP/1.1 100 Continue\r\n\r\n"));
        List<Object> interim = received();
        assertEquals(100, assertInstanceOf(HttpResponse.class, interim.get(0)).status().code());
        assertClosingAnswers(up, "stream_reset"); // not retried
    }

    @Test
    void aPostTheKeptUpstreamDroppedIsNotSentAgain() {
        EmbeddedChannel up = upstreamChannel();
        assertTrue(sentOnKept(up, HttpMethod.POST, "/", "0123456789").endsWith("0123456789"));
        assertClosingAnswers(up, "stream_reset");
    }

    @Test
    void aSecondExchangeOnTheConnectionStartsFresh() {
        EmbeddedChannel up = upstreamChannel();
        sentOnKept(up, HttpMethod.GET, "/one");
        up.writeInbound(ascii("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"));
        received();
        assertEquals(1, owner.finished);
        assertNotNull(owner.kept);

        // The next request goes elsewhere: the kept stream is let go and the fresh open fails. A response was
        // started in the first exchange; the second still gets its own error page, not a bare close.
        Authority other = new Authority("127.0.0.1", 8080);
        ProxyExchange second = exchange(HttpMethod.GET, "/two", new Route(other, other, "grant-b", "jti-b", "e1"));
        second.start(owner.kept);
        runTasks(up);
        assertFalse(up.isActive(), "the kept stream to another target is closed");
        List<Object> out = received();
        HttpResponse page = assertInstanceOf(HttpResponse.class, out.get(0));
        assertEquals(502, page.status().code());
        assertEquals("gateway_unreachable", page.headers().get(MuxProtocol.ERROR_HEADER));
    }

    /** A direct route (no grant, no environment) to a public-looking host, as the gate makes for direct egress. */
    private static Route direct(Authority target) {
        return new Route(target, target, null, null);
    }

    /** The first exchange on {@code up} (for {@code route}) is answered and its upstream kept; returns it. */
    private Upstream keptAfterOneExchange(EmbeddedChannel up, Route route) {
        sentOn(keptUpstream(up, route), route, HttpMethod.GET, "/one");
        up.writeInbound(ascii("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"));
        received();
        assertEquals(1, owner.finished);
        assertSame(up, owner.kept.channel, "the first exchange's upstream is kept");
        return owner.kept;
    }

    @Test
    void aSecondDirectRequestToTheSameTargetRunsOnTheKeptSocket() {
        Route direct = direct(new Authority("public.example", 80));
        EmbeddedChannel up = upstreamChannel();
        Upstream kept = keptAfterOneExchange(up, direct);

        String wire = sentOn(kept, direct, HttpMethod.GET, "/two");
        assertTrue(wire.startsWith("GET /two HTTP/1.1\r\n"), wire);
        assertTrue(up.isActive(), "the kept direct socket carries the second request");
        up.writeInbound(ascii("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\ny"));
        assertEquals(200, assertInstanceOf(HttpResponse.class, received().get(0)).status().code());
        assertEquals(2, owner.finished);
    }

    @Test
    void aKeptTunnelStreamIsNotUsedForADirectRequestToTheSameTarget() {
        Authority target = new Authority("public.example", 80);
        EmbeddedChannel up = upstreamChannel();
        Upstream kept = keptAfterOneExchange(up, new Route(target, target, "grant-a", "jti-a", "e1"));

        assertEquals("", sentOn(kept, direct(target), HttpMethod.GET, "/two"), "nothing sent on the tunnel stream");
        runTasks(up);
        assertFalse(up.isActive(), "the kept tunnel stream is let go");
        // The direct open (whose name does not resolve here) is what answers.
        HttpResponse page = assertInstanceOf(HttpResponse.class, received().get(0));
        assertEquals("target_unreachable", page.headers().get(MuxProtocol.ERROR_HEADER));
    }

    @Test
    void aKeptDirectSocketIsNotUsedForATunnelledRequestToTheSameTarget() {
        Authority target = new Authority("public.example", 80);
        EmbeddedChannel up = upstreamChannel();
        Upstream kept = keptAfterOneExchange(up, direct(target));

        assertEquals("", sentOn(kept, new Route(target, target, "grant-a", "jti-a", "e1"), HttpMethod.GET, "/two"),
                "nothing sent on the direct socket");
        runTasks(up);
        assertFalse(up.isActive(), "the kept direct socket is let go");
        // The fresh tunnel open (a never-started pool) is what answers.
        HttpResponse page = assertInstanceOf(HttpResponse.class, received().get(0));
        assertEquals("gateway_unreachable", page.headers().get(MuxProtocol.ERROR_HEADER));
    }
}
