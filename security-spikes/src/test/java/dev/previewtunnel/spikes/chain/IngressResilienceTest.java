package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.net.CookieManager;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;

import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The desktop side when things go wrong or change: restarts of the ingress on another port, a gateway that
 * dies mid-transfer, a graceful gateway restart under load, and session isolation.
 */
class IngressResilienceTest {
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

    private HttpClient client(CookieManager cookies) {
        HttpClient base = ProxyClients.httpClient(stack.proxy(), stack.session());
        return cookies == null ? base : HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .proxy(base.proxy().orElseThrow()).authenticator(base.authenticator().orElseThrow())
                .cookieHandler(cookies).build();
    }

    @Test
    void restartingTheIngressOnAnotherPortKeepsTheOriginAndItsCookies() throws Exception {
        CookieManager jar = new CookieManager();
        String origin = "http://localhost:" + app.port();
        HttpResponse<String> set = client(jar).send(HttpRequest.newBuilder(URI.create(origin + "/cookie/set?theme=dark"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, set.statusCode());
        int oldProxyPort = stack.proxy().getPort();

        stack.restartIngress(stack.ingressConfig().withListen(new InetSocketAddress("127.0.0.1", 0)), null);
        assertNotEquals(oldProxyPort, stack.proxy().getPort());

        // Same URL, same origin: the cookie jar (like a browser's, keyed by origin) still sends the cookie.
        HttpResponse<String> get = client(jar).send(HttpRequest.newBuilder(URI.create(origin + "/cookie/get"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, get.statusCode());
        assertEquals("theme=dark", get.body());
    }

    @Test
    void gatewayKilledDuringA200MegabyteTransferFailsPromptlyThenRecovers() throws Exception {
        long size = 200L * 1024 * 1024;
        HttpClient client = client(null);
        AtomicLong received = new AtomicLong();
        java.util.concurrent.CountDownLatch killed = new java.util.concurrent.CountDownLatch(1);
        CompletableFuture<Long> transfer = client.sendAsync(
                HttpRequest.newBuilder(URI.create("http://localhost:" + app.port() + "/bytes?n=" + size)).build(),
                HttpResponse.BodyHandlers.ofInputStream()).thenApply(r -> {
                    try (InputStream in = r.body()) {
                        byte[] buf = new byte[64 * 1024];
                        int n;
                        while ((n = in.read(buf)) > 0) {
                            if (received.addAndGet(n) > 8L * 1024 * 1024 && killed.getCount() > 0) {
                                // Stop reading until the gateway is gone, so the transfer cannot finish first.
                                killed.await(30, TimeUnit.SECONDS);
                            }
                        }
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                    return received.get();
                });
        until("transfer under way", Duration.ofSeconds(30), () -> received.get() > 8L * 1024 * 1024);
        stack.killGateway();
        killed.countDown();
        // The client sees an error promptly: the stream ends when the tunnel connection drops.
        ExecutionException failed = assertThrows(ExecutionException.class, () -> transfer.get(15, TimeUnit.SECONDS));
        assertTrue(received.get() < size, "the transfer cannot have completed");
        System.out.printf("{\"test\":\"gateway_killed\",\"receivedBeforeFailure\":%d,\"error\":\"%s\"}%n",
                received.get(), failed.getCause().getClass().getSimpleName());

        // While the gateway is down, a new request fails fast with the 502 page, not a hang.
        HttpResponse<String> down = client.send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + app.port() + "/hello")).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(502, down.statusCode());
        assertEquals("gateway_unreachable", down.headers().firstValue("ptun-error").orElse(""));
        assertTrue(down.body().contains("unreachable since"), down.body());

        stack.restartGatewayOnSameAddress();
        until("ingress reconnected", Duration.ofSeconds(30), () -> stack.ingress().pool().status().connected() > 0);
        HttpResponse<String> after = client.send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + app.port() + "/hello")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, after.statusCode());
        assertEquals(SampleApp.HELLO_BODY, after.body());
        assertTrue(stack.ingress().pool().status().reconnects() >= 1);
        // Nothing left open on the ingress side from the broken transfer.
        until("no stale streams", Duration.ofSeconds(10), () -> stack.ingress().pool().status().liveStreams() <= 1);
    }

    @Test
    void gracefulGatewayRestartDuring50ConcurrentRequestsLosesNoCompletedRequest() throws Exception {
        HttpClient client = client(null);
        long size = 4L * 1024 * 1024;
        long expected = SampleApp.patternCrc(size).getValue();
        List<CompletableFuture<long[]>> requests = new ArrayList<>();
        int servedBefore = app.requestsServed();
        for (int i = 0; i < 50; i++) {
            requests.add(client.sendAsync(HttpRequest.newBuilder(
                    URI.create("http://localhost:" + app.port() + "/bytes?n=" + size)).timeout(Duration.ofSeconds(60))
                    .build(), HttpResponse.BodyHandlers.ofInputStream()).thenApply(r -> {
                        CRC32 crc = new CRC32();
                        long n = ChainHttpTest.drain(r.body(), crc);
                        return new long[] {r.statusCode(), n, crc.getValue()};
                    }));
        }
        // All 50 reached the target (each is in flight or already done) before the gateway is told to stop.
        until("50 requests reached the target", Duration.ofSeconds(60),
                () -> app.requestsServed() - servedBefore >= 50);
        stack.stopGateway();          // GOAWAY: the streams in flight finish within the drain timeout
        stack.restartGatewayOnSameAddress();
        int completed = 0;
        int failed = 0;
        for (CompletableFuture<long[]> f : requests) {
            try {
                long[] r = f.get(90, TimeUnit.SECONDS); // none may hang
                if (r[0] == 200) {
                    assertEquals(size, r[1], "a completed response must be whole");
                    assertEquals(expected, r[2], "a completed response must be byte-exact");
                    completed++;
                } else {
                    assertEquals(502, r[0]); // refused promptly while the gateway was away
                    failed++;
                }
            } catch (ExecutionException e) {
                failed++; // cut off: an error, never a silent truncation
            }
        }
        System.out.printf("{\"test\":\"graceful_restart\",\"completed\":%d,\"failedPromptly\":%d}%n", completed, failed);
        assertEquals(50, completed + failed);
        assertEquals(50, completed, "every request that reached the target before GOAWAY completes");
        until("ingress back", Duration.ofSeconds(30), () -> stack.ingress().pool().status().connected() > 0);
        HttpResponse<String> after = client.send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + app.port() + "/hello")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, after.statusCode());
    }

    @Test
    void sessionACannotReachSessionBsGrants() throws Exception {
        try (SampleApp other = SampleApp.start("127.0.0.1", 0)) {
            BrowserSession b = stack.addSession("session-b");
            stack.grant(b, "localhost", other.port());
            HttpClient asA = client(null);
            HttpResponse<String> r = asA.send(HttpRequest.newBuilder(
                    URI.create("http://localhost:" + other.port() + "/hello")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(403, r.statusCode());
            assertEquals("not_granted", r.headers().firstValue("ptun-error").orElse(""));
            assertEquals(0, other.acceptedConnections());
            HttpResponse<String> asB = ProxyClients.httpClient(stack.proxy(), b).send(HttpRequest.newBuilder(
                    URI.create("http://localhost:" + other.port() + "/hello")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, asB.statusCode());
        }
    }

    @Test
    void directPolicyNeverReachesADesktopLoopbackServiceThatIsNotGranted() throws Exception {
        try (SampleApp desktopService = SampleApp.start("127.0.0.1", 0)) {
            stack.session().egress(dev.previewtunnel.ingress.session.EgressPolicy.DIRECT);
            HttpClient client = client(null);
            int port = desktopService.port();
            // None of these is granted, so each goes to direct egress, which must refuse it itself: exactly
            // policy_refused, never a not_granted that would mean the policy was not even consulted.
            for (String host : List.of("127.0.0.1", "127.0.0.2", "[::ffff:127.0.0.1]", "[::1]", "0.0.0.0",
                    "2130706433", "localhost", "LOCALHOST", "x.localhost")) {
                HttpResponse<String> r = client.send(HttpRequest.newBuilder(
                        URI.create("http://" + host + ":" + port + "/hello")).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(403, r.statusCode(), host + " -> " + r.body());
                assertEquals("policy_refused", r.headers().firstValue("ptun-error").orElse(""), host);
            }
            // The same through CONNECT (what a browser does for https:// and WebSockets).
            for (String authority : List.of("127.0.0.1:" + port, "[::ffff:127.0.0.1]:" + port, "0.0.0.0:" + port,
                    "localhost:" + port)) {
                String answer = ProxyClients.rawExchange(stack.proxy(), stack.session(),
                        "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority);
                assertTrue(answer.startsWith("HTTP/1.1 403 "), authority + " -> " + answer);
                assertTrue(answer.toLowerCase(java.util.Locale.ROOT).contains("\r\nptun-error: policy_refused\r\n"),
                        authority + " -> " + answer);
            }
            assertEquals(0, desktopService.acceptedConnections());
            // The counter counts: the same service reached without the proxy shows one connection.
            try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
                until("control connection counted", Duration.ofSeconds(10),
                        () -> desktopService.acceptedConnections() == 1);
            }
        }
    }
}
