package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnectException;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.proxy.HttpProxyHandler.HttpProxyConnectException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every refusal of the core path, each asserting the code a person or a script sees AND that the target was
 * never dialed (its accepted-connection count stays at zero).
 */
class ChainRefusalTest {
    static SampleApp app;
    static SampleApp otherApp;
    static TunnelStack stack;
    static EventLoopGroup group;

    @BeforeAll
    static void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        otherApp = SampleApp.start("127.0.0.1", 0);
        stack = TunnelStack.start(1);
        stack.grant("localhost", app.port());
        group = new io.netty.channel.MultiThreadIoEventLoopGroup(1, io.netty.channel.nio.NioIoHandler.newFactory());
    }

    @AfterAll
    static void stop() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        stack.close();
        app.close();
        otherApp.close();
    }

    private static HttpResponse<String> get(HttpClient client, String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(15)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void noCredentialGets407AndNothingIsDialed() throws Exception {
        int before = app.acceptedConnections();
        HttpClient anonymous = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .proxy(ProxySelector.of(stack.proxy())).build();
        HttpResponse<String> r = get(anonymous, "http://localhost:" + app.port() + "/hello");
        assertEquals(407, r.statusCode());
        assertTrue(r.headers().firstValue("proxy-authenticate").orElse("").startsWith("Basic"));
        assertEquals("proxy_auth_required", r.headers().firstValue("ptun-error").orElse(""));
        // CONNECT without a credential, with Netty's own proxy client.
        ExecutionException e = assertThrows(ExecutionException.class, () -> ProxyClients.connectTunnel(group,
                stack.proxy(), null, "localhost", app.port(), new ChannelInboundHandlerAdapter(), true));
        assertInstanceOf(HttpProxyConnectException.class, e.getCause());
        assertTrue(e.getCause().getMessage().contains("407"), e.getCause().getMessage());
        assertEquals(before, app.acceptedConnections());
    }

    @Test
    void wrongCredentialGets407AndNothingIsDialed() throws Exception {
        int before = app.acceptedConnections();
        ExecutionException e = assertThrows(ExecutionException.class, () -> ProxyClients.connectTunnel(group,
                stack.proxy(), stack.session().username(), "not-the-password", "localhost", app.port(),
                new ChannelInboundHandlerAdapter(), true));
        assertTrue(e.getCause().getMessage().contains("407"), e.getCause().getMessage());
        // The JDK client answers each 407 with the same wrong credential until it gives up.
        HttpClient wrong = ProxyClients.httpClient(stack.proxy(), stack.session().username(), "not-the-password");
        java.io.IOException io = assertThrows(java.io.IOException.class,
                () -> get(wrong, "http://localhost:" + app.port() + "/hello"));
        assertTrue(io.getMessage().contains("authentication"), io.getMessage());
        assertEquals(before, app.acceptedConnections());
    }

    @Test
    void originFormRequestToTheProxyPortIsRefusedBeforeAuthentication() throws Exception {
        int before = app.acceptedConnections();
        HttpClient direct = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpResponse<String> r = get(direct, "http://127.0.0.1:" + stack.proxy().getPort() + "/hello");
        assertEquals(400, r.statusCode());
        assertEquals("not_a_proxy_request", r.headers().firstValue("ptun-error").orElse(""));
        assertEquals(before, app.acceptedConnections());
    }

    @Test
    void authorityWithoutGrantIsRefusedAtTheIngressWith403() throws Exception {
        HttpClient client = ProxyClients.httpClient(stack.proxy(), stack.session());
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + otherApp.port() + "/hello")).header("Accept", "text/html").build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(403, r.statusCode());
        assertEquals("not_granted", r.headers().firstValue("ptun-error").orElse(""));
        assertTrue(r.body().contains("localhost:" + otherApp.port() + " is not granted to this browser session"),
                r.body());
        assertEquals(0, otherApp.acceptedConnections());
    }

    @Test
    void grantForPortAUsedForPortBIsRefusedByTheGatewayAndNothingIsDialed() throws Exception {
        String grantForA = stack.issueGrant("localhost", app.port(), Duration.ofMinutes(5));
        TunnelStreamException e = openDirect(new Authority("localhost", otherApp.port()), grantForA);
        assertEquals(TunnelError.GRANT_REFUSED, e.error());
        assertEquals("grant_wrong_target", e.detail());
        assertEquals(0, otherApp.acceptedConnections());
    }

    @Test
    void expiredGrantIsRefusedWithTheExpiredCode() throws Exception {
        int before = app.acceptedConnections();
        GrantIssuer past = new GrantIssuer(KeyDirectory.open(stack.keysDir()).signingKey(),
                Clock.fixed(Instant.now().minus(Duration.ofMinutes(30)), ZoneOffset.UTC));
        String expired = past.issueGrant(GrantSpec.tcp(TunnelStack.ENVIRONMENT, stack.session().id(), "localhost",
                app.port()), Duration.ofMinutes(5));
        TunnelStreamException e = openDirect(new Authority("localhost", app.port()), expired);
        assertEquals(TunnelError.GRANT_EXPIRED, e.error());
        assertEquals("grant_expired", e.detail());

        // Through the browser path the page and the header say so too.
        try (TunnelStack other = TunnelStack.start(1)) {
            GrantIssuer otherPast = new GrantIssuer(KeyDirectory.open(other.keysDir()).signingKey(),
                    Clock.fixed(Instant.now().minus(Duration.ofMinutes(30)), ZoneOffset.UTC));
            other.session().authorities().add(otherPast.issueGrant(GrantSpec.tcp(TunnelStack.ENVIRONMENT,
                    other.session().id(), "localhost", app.port()), Duration.ofMinutes(5)));
            HttpResponse<String> r = get(ProxyClients.httpClient(other.proxy(), other.session()),
                    "http://localhost:" + app.port() + "/hello");
            assertEquals(401, r.statusCode());
            assertEquals("grant_expired", r.headers().firstValue("ptun-error").orElse(""));
        }
        assertEquals(before, app.acceptedConnections());
    }

    @Test
    void revokedGrantGetsItsOwnStatusAndPageThroughTheProxy() throws Exception {
        try (SampleApp revokedTarget = SampleApp.start("127.0.0.1", 0)) {
            String grant = stack.grant("localhost", revokedTarget.port());
            String grantId = dev.previewtunnel.grants.UnverifiedGrantView.decode(grant).jti();
            try {
                assertEquals(0, stack.gateway().revokeGrant(grantId), "no live stream of it to close");
                HttpClient client = ProxyClients.httpClient(stack.proxy(), stack.session());
                HttpResponse<String> page = client.send(HttpRequest.newBuilder(URI.create("http://localhost:"
                        + revokedTarget.port() + "/hello")).header("Accept", "text/html").build(),
                        HttpResponse.BodyHandlers.ofString());
                // 410, not the 403 of not_granted nor the 401 of grant_expired: a script can tell them apart.
                assertEquals(410, page.statusCode(), page.body());
                assertEquals("grant_revoked", page.headers().firstValue("ptun-error").orElse(""));
                assertTrue(page.headers().firstValue("content-type").orElse("").startsWith("text/html"));
                assertTrue(page.body().contains("The grant for localhost:" + revokedTarget.port() + " was revoked"),
                        page.body());
                HttpResponse<String> text = get(client, "http://localhost:" + revokedTarget.port() + "/app.js");
                assertEquals(410, text.statusCode());
                assertEquals("grant_revoked", text.headers().firstValue("ptun-error").orElse(""));
                assertEquals(0, revokedTarget.acceptedConnections());
            } finally {
                stack.session().authorities().removeGrant(grantId);
            }
        }
    }

    @Test
    void unsignedAlgNoneGrantIsRefused() throws Exception {
        int before = app.acceptedConnections();
        String real = stack.issueGrant("localhost", app.port(), Duration.ofMinutes(5));
        String payload = real.split("\\.")[1];
        String header = Base64.getUrlEncoder().withoutPadding()
                .encodeToString("{\"alg\":\"none\",\"typ\":\"ptun-grant+jwt\"}".getBytes(StandardCharsets.UTF_8));
        TunnelStreamException e = openDirect(new Authority("localhost", app.port()), header + "." + payload + ".");
        assertEquals(TunnelError.GRANT_REFUSED, e.error());
        assertEquals("grant_bad_algorithm", e.detail());
        assertEquals(before, app.acceptedConnections());
    }

    @Test
    void tamperedGrantIsRefused() throws Exception {
        int before = app.acceptedConnections();
        String real = stack.issueGrant("localhost", app.port(), Duration.ofMinutes(5));
        String[] parts = real.split("\\.");
        String claims = new String(Base64.getUrlDecoder().decode(parts[1]), StandardCharsets.UTF_8)
                .replace("\"sid\":\"" + stack.session().id() + "\"", "\"sid\":\"someone-else\"");
        String forged = parts[0] + "." + Base64.getUrlEncoder().withoutPadding()
                .encodeToString(claims.getBytes(StandardCharsets.UTF_8)) + "." + parts[2];
        TunnelStreamException e = openDirect(new Authority("localhost", app.port()), forged);
        assertEquals(TunnelError.GRANT_REFUSED, e.error());
        assertEquals("grant_bad_signature", e.detail());
        assertEquals(before, app.acceptedConnections());
    }

    @Test
    void tamperedConnectionTokenIsRefusedAtUpgrade() {
        String token = stack.token();
        String tampered = token.substring(0, token.length() - 4) + (token.endsWith("AAAA") ? "BBBB" : "AAAA");
        TunnelClient client = new TunnelClient(group, io.netty.channel.socket.nio.NioSocketChannel.class, MuxSettings.defaults());
        ExecutionException e = assertThrows(ExecutionException.class, () -> client.connect(
                URI.create(stack.gateway().url(false)), tampered, null, Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS));
        TunnelConnectException cause = assertInstanceOf(TunnelConnectException.class, e.getCause());
        assertTrue(cause.getMessage().contains("refused the connection token"), cause.getMessage());
        assertTrue(!cause.getMessage().contains(token.substring(0, 20)), "no token material in the message");
    }

    /** A client of another build (protocol ptun.v2) against this gateway: refused at upgrade, saying so. */
    @Test
    void protocolVersionMismatchFailsWithAMessageNamingBothVersions() {
        String other = MuxProtocol.SUBPROTOCOL_PREFIX + (MuxProtocol.VERSION + 1);
        TunnelClient client = new TunnelClient(group, io.netty.channel.socket.nio.NioSocketChannel.class,
                MuxSettings.defaults()).offering(other);
        ExecutionException e = assertThrows(ExecutionException.class, () -> client.connect(
                URI.create(stack.gateway().url(false)), stack.token(), null, Duration.ofSeconds(5))
                .get(10, TimeUnit.SECONDS));
        TunnelConnectException cause = assertInstanceOf(TunnelConnectException.class, e.getCause());
        String message = cause.getMessage();
        System.out.printf("{\"test\":\"protocol_mismatch\",\"message\":\"%s\"}%n", message);
        assertTrue(message.startsWith("tunnel protocol version mismatch"), message);
        assertTrue(message.contains("this client speaks " + other), message);
        assertTrue(message.contains("gateway speaks " + MuxProtocol.SUBPROTOCOL), message);
    }

    @Test
    void targetNotListeningGetsAPrompt502NamingTheCause() throws Exception {
        int freePort;
        try (ServerSocket s = new ServerSocket(0)) {
            freePort = s.getLocalPort();
        }
        stack.grant("localhost", freePort);
        HttpClient client = ProxyClients.httpClient(stack.proxy(), stack.session());
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://localhost:" + freePort + "/"))
                .header("Accept", "text/html").timeout(Duration.ofSeconds(15)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(502, r.statusCode());
        assertEquals("target_refused", r.headers().firstValue("ptun-error").orElse(""));
        assertTrue(r.body().contains("Nothing is listening on localhost:" + freePort), r.body());
    }

    /**
     * A target that never answers the dial: a listening socket that never accepts, its accept queue (backlog 1)
     * filled by two connections. Linux then drops further SYNs instead of refusing them (with
     * tcp_abort_on_overflow=0, the default, checked), so the gateway's connect neither succeeds nor fails until its
     * dial timeout (5 s by default): the browser gets the 504 page with dial_timeout, well before the ingress's own
     * stream-open timeout (10 s). The grant names 127.0.0.1, so no second address (::1) is tried after the timeout.
     */
    @Test
    void targetThatNeverAnswersTheDialGetsDialTimeout() throws Exception {
        assertEquals("0", Files.readAllLines(Path.of("/proc/sys/net/ipv4/tcp_abort_on_overflow")).get(0).trim(),
                "this test needs the kernel to drop SYNs on a full accept queue, not reset them");
        try (ServerSocketChannel full = ServerSocketChannel.open()) {
            full.bind(new InetSocketAddress("127.0.0.1", 0), 1);
            int port = ((InetSocketAddress) full.getLocalAddress()).getPort();
            List<SocketChannel> fillers = new ArrayList<>();
            try {
                for (int i = 0; i < 2; i++) {
                    fillers.add(SocketChannel.open(new InetSocketAddress("127.0.0.1", port)));
                }
                // The kernel's own count of the queue (/proc/net/tcp rx_queue of a LISTEN socket): full at 2 > 1.
                until("accept queue of 127.0.0.1:" + port + " full", Duration.ofSeconds(10),
                        () -> acceptQueueLength(port) >= 2);
                stack.grant("127.0.0.1", port);
                long dialsBefore = stack.gateway().metrics().dialAttempts();
                HttpClient client = ProxyClients.httpClient(stack.proxy(), stack.session());
                long t0 = System.nanoTime();
                HttpResponse<String> r = client.send(HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + port + "/")).header("Accept", "text/html")
                        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
                long millis = (System.nanoTime() - t0) / 1_000_000;
                System.out.printf("{\"test\":\"dial_timeout\",\"status\":%d,\"code\":\"%s\",\"millis\":%d}%n",
                        r.statusCode(), r.headers().firstValue("ptun-error").orElse(""), millis);
                assertEquals(504, r.statusCode(), r.body());
                assertEquals("dial_timeout", r.headers().firstValue("ptun-error").orElse(""), r.body());
                assertEquals(dialsBefore + 1, stack.gateway().metrics().dialAttempts(), "one dial attempted");
            } finally {
                for (SocketChannel f : fillers) {
                    f.close();
                }
            }
        }
    }

    /**
     * The accept-queue length of the LISTEN socket on {@code port}, from /proc/net/tcp and tcp6 (a Java socket bound
     * to 127.0.0.1 is usually an IPv6 socket, listed in tcp6 as ::ffff:127.0.0.1): a LISTEN line's rx_queue.
     */
    private static int acceptQueueLength(int port) {
        String suffix = String.format(":%04X", port);
        try {
            for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
                for (String line : Files.readAllLines(Path.of(table))) {
                    String[] f = line.trim().split("\\s+");
                    if (f.length > 4 && f[1].endsWith(suffix) && f[3].equals("0A")) {
                        return Integer.parseInt(f[4].substring(f[4].indexOf(':') + 1), 16);
                    }
                }
            }
            return -1;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Opens a stream straight on a tunnel connection, as a misbehaving ingress could. */
    private TunnelStreamException openDirect(Authority authority, String grant) throws Exception {
        TunnelClient client = new TunnelClient(group, io.netty.channel.socket.nio.NioSocketChannel.class, MuxSettings.defaults());
        TunnelConnection connection = client.connect(URI.create(stack.gateway().url(false)), stack.token(), null,
                Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
        try {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> connection.openStream(authority, grant, Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS));
            return assertInstanceOf(TunnelStreamException.class, e.getCause());
        } finally {
            connection.close();
        }
    }
}
