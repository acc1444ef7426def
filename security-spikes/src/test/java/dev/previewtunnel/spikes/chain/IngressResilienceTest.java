package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
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
import static org.junit.jupiter.api.Assertions.assertFalse;
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
        int appConnectionsBefore = app.openConnections();
        GatewayServer killedGateway = stack.gateway();
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

        // While the gateway is down, a new request waits for it (the pool was up: a restart may be under way), at
        // most the open timeout, then gets the 502 page: bounded, not a hang.
        assertWaitsTheOpenTimeoutWhileUnreachable(client);

        stack.restartGatewayOnSameAddress();
        until("ingress reconnected", Duration.ofSeconds(30), () -> stack.ingress().pool().status().connected() > 0);
        // The next request, on a browser connection that closes after it (Connection: close), so that once it is
        // done nothing of this test may be left open anywhere.
        String after = getAndClose("/hello");
        assertTrue(after.startsWith("HTTP/1.1 200 "), after);
        assertTrue(after.endsWith("\r\n\r\n" + SampleApp.HELLO_BODY), after);
        assertTrue(stack.ingress().pool().status().reconnects() >= 1);
        // No leak anywhere: the ingress counts streams on every connection it opened, the dropped one included;
        // neither gateway (the killed one, the new one) holds a stream; the app is back to its connections.
        untilPool("nothing left open", Duration.ofSeconds(10), () -> stack.ingress().pool().status().liveStreams() == 0
                && killedGateway.liveStreams().size() == 0 && stack.gateway().liveStreams().size() == 0
                && app.openConnections() == appConnectionsBefore,
                () -> "killed gateway streams " + killedGateway.liveStreams().size() + ", gateway streams "
                        + stack.gateway().liveStreams().size() + ", app connections " + app.openConnections()
                        + " (before: " + appConnectionsBefore + ")");
        System.out.printf("{\"test\":\"gateway_killed_leaks\",\"ingressLiveStreams\":%d,"
                        + "\"killedGatewayStreams\":%d,\"gatewayStreams\":%d,\"appOpenConnections\":%d,"
                        + "\"appOpenBefore\":%d}%n", stack.ingress().pool().status().liveStreams(),
                killedGateway.liveStreams().size(), stack.gateway().liveStreams().size(), app.openConnections(),
                appConnectionsBefore);
    }

    @Test
    void anIngressStartedWhileNoGatewayListensAnswersAt502AtOnce() throws Exception {
        stack.killGateway();
        // A fresh ingress whose very first connect attempts are refused: no connection ever came up.
        stack.restartIngress(stack.ingressConfig(), null);
        HttpClient client = client(null);
        assertFailsFastWhileUnreachable(client);
        assertFailsFastWhileUnreachable(client); // and again, while it keeps retrying
        assertEquals(0, stack.ingress().pool().status().connected());

        stack.restartGatewayOnSameAddress();
        until("ingress connected", Duration.ofSeconds(30), () -> stack.ingress().pool().status().connected() > 0);
        String after = getAndClose("/hello");
        assertTrue(after.startsWith("HTTP/1.1 200 "), after);
    }

    /** {@link dev.previewtunnel.testing.Await#until}, saying what the pool looked like when it timed out. */
    private void untilPool(String what, Duration timeout, java.util.function.BooleanSupplier condition,
                           java.util.function.Supplier<String> more) {
        try {
            until(what, timeout, condition);
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; pool " + stack.ingress().pool().status() + "; "
                    + more.get(), e);
        }
    }

    /**
     * A new request while a gateway that was up is unreachable: 502, gateway_unreachable, after the open timeout
     * (it waited for the gateway to come back), not later.
     */
    private void assertWaitsTheOpenTimeoutWhileUnreachable(HttpClient client) throws Exception {
        long openTimeout = stack.ingressConfig().openTimeout().toMillis();
        long start = System.nanoTime();
        HttpResponse<String> down = client.send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + app.port() + "/hello")).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        System.out.printf("{\"test\":\"unreachable_after_up_answer\",\"status\":%d,\"millis\":%d}%n",
                down.statusCode(), millis);
        assertEquals(502, down.statusCode(), down::body);
        assertEquals("gateway_unreachable", down.headers().firstValue("ptun-error").orElse(""));
        assertTrue(millis >= openTimeout - 100 && millis < openTimeout + 3_000, "answered in " + millis + " ms");
    }

    /** A new request while a gateway never reached is unreachable is answered within 2 s: 502, gateway_unreachable. */
    private void assertFailsFastWhileUnreachable(HttpClient client) throws Exception {
        long start = System.nanoTime();
        HttpResponse<String> down = client.send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + app.port() + "/hello")).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        System.out.printf("{\"test\":\"unreachable_answer\",\"status\":%d,\"millis\":%d}%n",
                down.statusCode(), millis);
        assertEquals(502, down.statusCode(), down::body);
        assertEquals("gateway_unreachable", down.headers().firstValue("ptun-error").orElse(""));
        // Words, never the connect failure's own text (which stays in the audit line).
        assertTrue(down.body().contains("could not connect to the environment gateway"), down.body());
        assertFalse(down.body().contains("finishConnect") || down.body().contains("Connection refused"), down.body());
        assertTrue(millis < 2_000, "answered in " + millis + " ms");
    }

    /**
     * One absolute-form GET through the proxy on a fresh socket with {@code Connection: close}; returns everything
     * the proxy sent until it closed the connection.
     */
    private String getAndClose(String path) throws IOException {
        String authority = "localhost:" + app.port();
        String credential = Base64.getEncoder().encodeToString((stack.session().username() + ":"
                + stack.session().password()).getBytes(StandardCharsets.UTF_8));
        try (Socket socket = new Socket()) {
            socket.connect(stack.proxy(), 10_000);
            socket.setSoTimeout(20_000);
            socket.getOutputStream().write(("GET http://" + authority + path + " HTTP/1.1\r\nHost: " + authority
                    + "\r\nProxy-Authorization: Basic " + credential + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            return new String(socket.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        }
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
    void rollingRestartSendsNewRequestsDuringTheDrainToTheNewGatewayAndLetsInFlightOnesFinish() throws Exception {
        // Gateway A (this stack's) drains for up to 60 s; gateway B is its replacement. The ingress dials a relay
        // (the address that stays the same during a rolling restart), which sends new connections to B once
        // switched. Gateway A's drain is stretched on purpose: the in-flight transfers hold their streams open
        // until every new request has been answered, so all of those are issued while A is still draining.
        stack.close();
        stack = TunnelStack.start(2, Duration.ofSeconds(60));
        stack.grant("localhost", app.port());
        GatewayServer gatewayA = stack.gateway();
        URI direct = URI.create(gatewayA.url(false));
        try (GatewayServer gatewayB = stack.startAnotherGateway();
             SwitchableTcpRelay relay = SwitchableTcpRelay.start(gatewayA.address())) {
            stack.restartIngress(stack.ingressConfig().withGateway(new URI(direct.getScheme(), null, "127.0.0.1",
                    relay.port(), direct.getPath(), direct.getQuery(), null)), null);
            untilPool("both connections up through the relay, on A", Duration.ofSeconds(30),
                    () -> stack.ingress().pool().status().connected() == 2 && gatewayA.connectionCount() == 2,
                    () -> "gateway A connections: " + gatewayA.connectionCount());

            int inFlight = 8;
            long bigSize = 32L * 1024 * 1024;
            long bigCrc = SampleApp.patternCrc(bigSize).getValue();
            java.util.concurrent.CountDownLatch newRequestsDone = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.atomic.AtomicInteger started = new java.util.concurrent.atomic.AtomicInteger();
            HttpClient slowClient = client(null);
            List<CompletableFuture<long[]>> transfers = new ArrayList<>();
            for (int i = 0; i < inFlight; i++) {
                transfers.add(slowClient.sendAsync(HttpRequest.newBuilder(
                        URI.create("http://localhost:" + app.port() + "/bytes?n=" + bigSize)).build(),
                        HttpResponse.BodyHandlers.ofInputStream()).thenApply(r -> {
                            CRC32 crc = new CRC32();
                            long n = 0;
                            try (InputStream in = r.body()) {
                                byte[] first = in.readNBytes(1 << 20);
                                crc.update(first);
                                n += first.length;
                                started.incrementAndGet();
                                // Hold the stream open on A until the new requests are done (bounded).
                                if (!newRequestsDone.await(90, TimeUnit.SECONDS)) {
                                    throw new IllegalStateException("new requests never finished");
                                }
                                n += ChainHttpTest.drain(in, crc);
                            } catch (IOException e) {
                                throw new java.io.UncheckedIOException(e);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                                throw new IllegalStateException(e);
                            }
                            return new long[] {r.statusCode(), n, crc.getValue()};
                        }));
            }
            until("transfers under way on A", Duration.ofSeconds(60),
                    () -> started.get() == inFlight && gatewayA.liveStreams().size() == inFlight);

            relay.switchTo(gatewayB.address());
            CompletableFuture<Void> drainA = CompletableFuture.runAsync(stack::stopGateway); // GOAWAY, then waits
            untilPool("the ingress saw GOAWAY on both connections", Duration.ofSeconds(20),
                    () -> stack.ingress().pool().status().draining() == 2, () -> "");

            int fresh = 20;
            long smallSize = 256L * 1024;
            long smallCrc = SampleApp.patternCrc(smallSize).getValue();
            HttpClient freshClient = client(null);
            List<CompletableFuture<long[]>> during = new ArrayList<>();
            for (int i = 0; i < fresh; i++) {
                during.add(freshClient.sendAsync(HttpRequest.newBuilder(
                        URI.create("http://localhost:" + app.port() + "/bytes?n=" + smallSize))
                        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofInputStream())
                        .thenApply(r -> {
                            CRC32 crc = new CRC32();
                            long n = ChainHttpTest.drain(r.body(), crc);
                            return new long[] {r.statusCode(), n, crc.getValue()};
                        }));
            }
            for (CompletableFuture<long[]> f : during) {
                long[] r = f.get(60, TimeUnit.SECONDS);
                assertEquals(200, r[0], "a request issued during the drain");
                assertEquals(smallSize, r[1]);
                assertEquals(smallCrc, r[2], "byte-exact");
            }
            // All of them were answered while A was still draining, and none of them went to A.
            boolean drainingThroughout = !drainA.isDone() && gatewayA.liveStreams().size() == inFlight;
            System.out.printf("{\"test\":\"rolling_restart\",\"newDuringDrain\":%d,\"inFlight\":%d,"
                    + "\"aStillDraining\":%s,\"bConnections\":%d}%n", fresh, inFlight, drainingThroughout,
                    gatewayB.connectionCount());
            assertTrue(drainingThroughout, "gateway A finished draining before the new requests were answered");
            assertEquals(2, gatewayB.connectionCount(), "the ingress replaced both drained connections on B");

            newRequestsDone.countDown();
            for (CompletableFuture<long[]> f : transfers) {
                long[] r = f.get(90, TimeUnit.SECONDS);
                assertEquals(200, r[0]);
                assertEquals(bigSize, r[1], "an in-flight transfer finishes whole across the drain");
                assertEquals(bigCrc, r[2], "and byte-exact");
            }
            drainA.get(60, TimeUnit.SECONDS);
            untilPool("the drained connections are gone", Duration.ofSeconds(20),
                    () -> stack.ingress().pool().status().draining() == 0
                            && stack.ingress().pool().status().connected() == 2, () -> "");
        }
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
