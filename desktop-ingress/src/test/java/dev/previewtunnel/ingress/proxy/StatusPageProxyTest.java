package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.status.FrontDoor;
import dev.previewtunnel.ingress.status.StatusLine;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelError;
import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The status page ({@code http://preview.localhost/}) and the gateway-down page, behind a real proxy listener whose
 * tunnel pool dials a closed port: real connect failures (whose text, e.g. {@code finishConnect(..) failed}, must
 * never reach a page), two sessions, and a recording {@link FrontDoor}.
 */
class StatusPageProxyTest {
    @TempDir
    static Path keys;

    static final Transports transports = Transports.best();
    static EventLoopGroup group;
    static TunnelPool pool;
    static ProxyServer proxy;
    static IngressContext context;
    static BrowserSession s1;
    static BrowserSession s2;
    static final List<String> opened = new CopyOnWriteArrayList<>();
    static final AtomicReference<FrontDoor> frontDoor = new AtomicReference<>();

    @BeforeAll
    static void start() throws Exception {
        GrantIssuer issuer = new GrantIssuer(KeyDirectory.init(keys.resolve("k")).signingKey(), Clock.systemUTC());
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort();
        }
        group = transports.newGroup(1, "status-page-test");
        IngressConfig config = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create("ws://127.0.0.1:" + closed + "/tunnel"));
        pool = new TunnelPool(new TunnelClient(group, transports.socketChannel(), MuxSettings.defaults()),
                config.gateway(), () -> "unused", null, 1, config.connectTimeout());
        SessionRegistry sessions = new SessionRegistry();
        s1 = sessions.add(BrowserSession.create("s1"));
        s2 = sessions.add(BrowserSession.create("s2"));
        s1.authorities().add(issuer.issueGrant(GrantSpec.tcp("e1", "s1", "localhost", 5173), Duration.ofMinutes(10)));
        s2.authorities().add(issuer.issueGrant(GrantSpec.tcp("e1", "s2", "localhost", 9000), Duration.ofMinutes(10)));
        context = new IngressContext(config, sessions, pool, new AuditLog("ingress"));
        proxy = new ProxyServer(group, transports, context);
        pool.start();
        until("the pool's connect to the closed port failed", Duration.ofSeconds(20),
                () -> pool.status().lastError() != null);
    }

    @AfterAll
    static void stop() {
        proxy.close();
        pool.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static String auth(BrowserSession s) {
        return "\r\nProxy-Authorization: " + RawProxyExchange.basic(s.username(), s.password());
    }

    private static RawProxyExchange get(String authority, String path, BrowserSession s) throws Exception {
        return RawProxyExchange.send(proxy.address(), "GET http://" + authority + path + " HTTP/1.1\r\nHost: "
                + authority + "\r\nAccept: text/html" + (s == null ? "" : auth(s)));
    }

    private static RawProxyExchange open(String origin, String body) throws Exception {
        return RawProxyExchange.sendWithBody(proxy.address(), "POST http://preview.localhost/open HTTP/1.1\r\n"
                + "Host: preview.localhost\r\nContent-Type: application/x-www-form-urlencoded"
                + (origin == null ? "" : "\r\nOrigin: " + origin) + auth(s1), body);
    }

    /** A front door whose lines carry markup (to be escaped), that finds 5174 and opens it. */
    private static FrontDoor recording() {
        return new FrontDoor() {
            @Override
            public List<StatusLine> status(String sessionId) {
                return List.of(new StatusLine("SSH", "connected to <b>host</b> & co", true));
            }

            @Override
            public CompletableFuture<List<Integer>> discoveredPorts(String sessionId) {
                return CompletableFuture.completedFuture(List.of(5174));
            }

            @Override
            public CompletableFuture<URI> openPort(String sessionId, int port) {
                opened.add(sessionId + ":" + port);
                return CompletableFuture.completedFuture(URI.create("http://localhost:" + port + "/"));
            }

            @Override
            public String fix(TunnelError error, String authority) {
                return error == TunnelError.GATEWAY_UNREACHABLE ? "Run the front door's <fix> for " + authority : null;
            }

            @Override
            public String renewalProblem(String sessionId, String target) {
                return null;
            }
        };
    }

    @Test
    void theGatewayDownPageSaysWhatToDoInWordsAndNeverTheConnectFailuresText() throws Exception {
        context.frontDoor().set(null);
        String raw = pool.status().lastError();
        RawProxyExchange r = get("localhost:5173", "/", s1);
        assertEquals(502, r.status(), r.toString());
        assertEquals("gateway_unreachable", r.header("ptun-error"));
        String page = r.bodyText();
        assertTrue(page.contains("could not connect to the environment gateway"), page);
        assertTrue(page.contains("env-gateway serve"), "the generic fix names the command: " + page);
        assertTrue(page.contains("<script>") && page.contains("<noscript><meta http-equiv=\"refresh\""), page);
        assertTrue(r.header("content-security-policy").contains("script-src 'sha256-"), r.toString());
        assertFalse(page.contains(raw), "the connect failure's own text: " + raw);
        for (String leak : List.of("finishConnect", "Connection refused", "error(-111)", "Exception")) {
            assertFalse(page.contains(leak), leak + " in " + page);
        }
        // A front door's fix replaces the generic one, escaped.
        context.frontDoor().set(recording());
        String withFrontDoor = get("localhost:5173", "/", s1).bodyText();
        assertTrue(withFrontDoor.contains("Run the front door&#39;s &lt;fix&gt; for localhost:5173"), withFrontDoor);
        assertFalse(withFrontDoor.contains("env-gateway serve"), withFrontDoor);
    }

    @Test
    void theStatusPageNeedsTheSessionsCredential() throws Exception {
        RawProxyExchange r = get("preview.localhost", "/", null);
        assertEquals(407, r.status(), r.toString());
        assertEquals("proxy_auth_required", r.header("ptun-error"));
        assertFalse(r.bodyText().contains("5173"), r.toString());
    }

    @Test
    void theStatusPageShowsThisSessionsPreviewsTunnelAndFrontDoorEscapedAndNoSecret() throws Exception {
        context.frontDoor().set(recording());
        get("localhost:5173", "/", s1); // a refusal recorded among s1's last errors
        RawProxyExchange r = get("preview.localhost", "/", s1);
        assertEquals(200, r.status(), r.toString());
        assertEquals("", r.header("ptun-error"), "the status page is no error");
        assertTrue(r.header("content-security-policy").contains("frame-ancestors 'none'"), r.toString());
        String page = r.bodyText();
        assertTrue(page.contains("href=\"http://localhost:5173/\""), page);
        assertTrue(page.contains("localhost:5173 in e1"), page);
        assertTrue(page.contains("expires "), page);
        assertFalse(page.contains("9000"), "another session's preview is never shown: " + page);
        assertTrue(page.contains("not connected"), page);
        assertTrue(page.contains("the gateway refused the connection"), page);
        assertFalse(page.contains(pool.status().lastError()), page);
        assertTrue(page.contains("connected to &lt;b&gt;host&lt;/b&gt; &amp; co"), page);
        assertFalse(page.contains("<b>host</b>"), page);
        assertTrue(page.contains("name=\"port\" value=\"5174\""), page);
        assertTrue(page.contains("<code>gateway_unreachable</code>"), "the last errors: " + page);
        for (String secret : List.of(s1.password(), s2.password(), s1.authorities().entries().get(0).grant())) {
            assertFalse(page.contains(secret), "no credential or grant on the page");
        }
        // Another session sees its own, not s1's.
        String other = get("preview.localhost", "/", s2).bodyText();
        assertTrue(other.contains("localhost:9000"), other);
        assertFalse(other.contains("localhost:5173/"), other);
    }

    @Test
    void openingAPortNeedsTheStatusPagesOriginThenRedirects() throws Exception {
        context.frontDoor().set(recording());
        opened.clear();
        RawProxyExchange none = open(null, "port=5174");
        assertEquals(403, none.status(), none.toString());
        RawProxyExchange crossSite = open("http://localhost:5173", "port=5174");
        assertEquals(403, crossSite.status(), crossSite.toString());
        assertEquals(List.of(), opened, "no port opened for a POST from elsewhere");
        assertEquals(400, open("http://preview.localhost", "port=70000").status());
        RawProxyExchange ok = open("http://preview.localhost", "port=5174");
        assertEquals(303, ok.status(), ok.toString());
        assertEquals("http://localhost:5174/", ok.header("location"));
        assertEquals(List.of("s1:5174"), opened);
    }

    @Test
    void anythingElseThereIsNotFoundAndConnectToItIsRefused() throws Exception {
        assertEquals(404, get("preview.localhost", "/other", s1).status());
        RawProxyExchange otherPort = get("preview.localhost:8080", "/", s1);
        assertEquals("not_granted", otherPort.header("ptun-error"), "another port is no status page: " + otherPort);
        RawProxyExchange connect = RawProxyExchange.send(proxy.address(),
                "CONNECT preview.localhost:80 HTTP/1.1\r\nHost: preview.localhost:80" + auth(s1));
        assertEquals(403, connect.status(), connect.toString());
        assertEquals("not_granted", connect.header("ptun-error"));
    }
}
