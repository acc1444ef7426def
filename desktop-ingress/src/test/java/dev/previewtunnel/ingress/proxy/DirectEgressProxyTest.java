package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.EgressPolicy;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.mux.MuxSettings;
import dev.previewtunnel.mux.Transports;
import dev.previewtunnel.mux.TunnelClient;
import dev.previewtunnel.mux.audit.AuditLog;
import dev.previewtunnel.sampleapp.SampleApp;
import io.netty.channel.EventLoopGroup;
import io.netty.util.NetUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A session with the {@code direct} policy and no grants, behind a real proxy listener, asking for a service that
 * really listens on the desktop's loopback: in absolute form and with CONNECT, by address, by IPv4-mapped
 * spelling, by {@code localhost} and by a public-looking name whose DNS answer is loopback. Every one is refused
 * with {@code policy_refused} and the service accepts no connection at all.
 */
class DirectEgressProxyTest {
    private final Transports transports = Transports.best();
    private EventLoopGroup group;
    private ExecutorService dns;
    private ProxyServer proxy;
    private BrowserSession session;
    private SampleApp desktopService;
    private final ConcurrentLinkedQueue<String> lookups = new ConcurrentLinkedQueue<>();

    @BeforeEach
    void start() throws Exception {
        desktopService = SampleApp.start("127.0.0.1", 0);
        group = transports.newGroup(1, "direct-egress-test");
        dns = Executors.newSingleThreadExecutor();
        IngressConfig config = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create("ws://127.0.0.1:1/tunnel"));
        // Never started: a direct route does not use the tunnel.
        TunnelPool pool = new TunnelPool(new TunnelClient(group, transports.socketChannel(), MuxSettings.defaults()),
                config.gateway(), () -> "unused", null, 1, config.connectTimeout());
        // What a rebinding DNS server would answer: public-looking names that point at the desktop itself.
        Map<String, String> dnsAnswers = Map.of("rebind.example", "127.0.0.1", "mapped.example", "::ffff:127.0.0.1",
                "any.example", "0.0.0.0");
        DirectDialer dialer = new DirectDialer(transports.socketChannel(), dns, Duration.ofSeconds(5), host -> {
            lookups.add(host);
            String answer = dnsAnswers.get(host);
            if (answer == null) {
                throw new java.net.UnknownHostException(host);
            }
            return new InetAddress[] {InetAddress.getByAddress(host, NetUtil.createByteArrayFromIpAddressString(answer))};
        });
        SessionRegistry sessions = new SessionRegistry();
        session = sessions.add(BrowserSession.create("direct-test").egress(EgressPolicy.DIRECT));
        proxy = new ProxyServer(group, transports, new IngressContext(config, sessions, pool, new AuditLog("ingress"),
                dialer));
    }

    @AfterEach
    void stop() {
        proxy.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        dns.shutdownNow();
        desktopService.close();
    }

    private String auth() {
        return "Proxy-Authorization: " + RawProxyExchange.basic(session.username(), session.password());
    }

    private void assertPolicyRefused(RawProxyExchange r, String what) {
        assertEquals(403, r.status(), what + ": " + r);
        assertEquals("policy_refused", r.header("ptun-error"), what + ": " + r);
        assertTrue(r.bodyText().contains("Direct egress never reaches this desktop's own loopback"), what + ": " + r);
    }

    @Test
    void absoluteFormRequestsForTheDesktopsLoopbackAreRefused() throws Exception {
        int port = desktopService.port();
        for (String host : List.of("127.0.0.1", "127.0.0.2", "[::ffff:127.0.0.1]", "[::1]", "0.0.0.0", "localhost",
                "2130706433", "rebind.example", "mapped.example", "any.example")) {
            RawProxyExchange r = RawProxyExchange.send(proxy.address(), "GET http://" + host + ":" + port
                    + "/hello HTTP/1.1\r\nHost: " + host + ":" + port + "\r\n" + auth());
            assertPolicyRefused(r, host);
        }
        // The names were refused on their answers: each was looked up exactly once; literals and localhost never.
        assertEquals(List.of("rebind.example", "mapped.example", "any.example"), List.copyOf(lookups));
        assertNothingReachedTheDesktopService();
    }

    @Test
    void connectRequestsForTheDesktopsLoopbackAreRefused() throws Exception {
        int port = desktopService.port();
        for (String authority : List.of("127.0.0.1:" + port, "[::ffff:127.0.0.1]:" + port, "0.0.0.0:" + port,
                "localhost:" + port, "rebind.example:" + port, "mapped.example:" + port)) {
            RawProxyExchange r = RawProxyExchange.send(proxy.address(), "CONNECT " + authority + " HTTP/1.1\r\nHost: "
                    + authority + "\r\n" + auth());
            assertPolicyRefused(r, "CONNECT " + authority);
        }
        assertEquals(List.of("rebind.example", "mapped.example"), List.copyOf(lookups));
        assertNothingReachedTheDesktopService();
    }

    /** Zero accepted connections, and the counter demonstrably counts: one direct connection makes it one. */
    private void assertNothingReachedTheDesktopService() throws IOException {
        assertEquals(0, desktopService.acceptedConnections());
        try (Socket s = new Socket("127.0.0.1", desktopService.port())) {
            until("the control connection is counted", Duration.ofSeconds(10),
                    () -> desktopService.acceptedConnections() == 1);
        }
        assertTrue(desktopService.acceptedConnections() == 1);
    }
}
