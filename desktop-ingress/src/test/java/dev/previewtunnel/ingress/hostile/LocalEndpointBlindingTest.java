package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.local.http.MetricsServer;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.local.http.LocalApi;
import dev.previewtunnel.local.http.LocalHttpServer;
import dev.previewtunnel.testing.RawHttp;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.channel.Channel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 4: one local process holding half a request head on a local endpoint (the ingress's metrics and
 * control API) must not delay anybody else's request, and is cut at the request deadline (default 5 s); squatters
 * filling the connection cap do not lock an honest client out. Both endpoints run on {@link LocalHttpServer} with its default
 * limits here, as {@code desktop-ingress run} starts them without the flags.
 */
class LocalEndpointBlindingTest {
    private static final String TOKEN = LocalApi.newToken();
    /** The default request deadline, and the slack a loaded 2-core machine gets on top of it. */
    private static final long DEADLINE_MS = LocalHttpServer.Limits.DEFAULT_REQUEST_TIMEOUT.toMillis();
    private static final long SLACK_MS = 3000;

    private Ingress ingress;
    private Channel control;
    private MetricsServer metrics;

    @BeforeEach
    void start() throws Exception {
        // No gateway: the proxy and the pool are not under test, the local endpoints are.
        ingress = Ingress.start(IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create("ws://127.0.0.1:1/tunnel")), () -> "unused", null);
        control = ingress.bindLocalApi(new InetSocketAddress("127.0.0.1", 0), TOKEN,
                (method, path, body) -> LocalApi.Response.ok(LocalApi.object().put("path", path)));
        PrometheusMeterRegistry registry = MetricsServer.newRegistry();
        metrics = MetricsServer.start(new InetSocketAddress("127.0.0.1", 0), registry);
    }

    @AfterEach
    void stop() {
        if (metrics != null) {
            metrics.close();
        }
        if (control != null) {
            control.close().syncUninterruptibly();
        }
        if (ingress != null) {
            ingress.close();
        }
    }

    @Test
    void halfARequestHeadOnTheMetricsEndpointDelaysNoScrapeAndIsCutAtTheDeadline() throws Exception {
        InetSocketAddress at = metrics.address();
        warmUp(at, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1");
        try (Socket hog = RawHttp.halfHead(at, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")) {
            long since = System.nanoTime();
            RawHttp.Timed scrape = RawHttp.request(at, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1",
                    Duration.ofSeconds(5));
            long cut = RawHttp.millisUntilClosed(hog, since, Duration.ofMillis(DEADLINE_MS + SLACK_MS));
            System.out.printf("{\"test\":\"metrics_half_head\",\"scrapeStatus\":%d,\"scrapeMs\":%d,"
                    + "\"halfHeadCutMs\":%d}%n", scrape.status(), scrape.millis(), cut);
            assertEquals(200, scrape.status(), "an honest scrape is answered while half a head is held (5 s bound)");
            assertTrue(scrape.millis() < 2000, "scrape took " + scrape.millis() + " ms");
            assertTrue(scrape.text().contains("jvm_"), "a real scrape");
            assertCutAtTheDeadline(cut);
        }
    }

    @Test
    void halfARequestHeadOnTheControlApiDelaysNoRequestAndIsCutAtTheDeadline() throws Exception {
        InetSocketAddress at = (InetSocketAddress) control.localAddress();
        warmUp(at, "GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN);
        try (Socket hog = RawHttp.halfHead(at, "GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")) {
            long since = System.nanoTime();
            RawHttp.Timed status = RawHttp.request(at, "GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Authorization: Bearer " + TOKEN, Duration.ofSeconds(5));
            long cut = RawHttp.millisUntilClosed(hog, since, Duration.ofMillis(DEADLINE_MS + SLACK_MS));
            System.out.printf("{\"test\":\"control_half_head\",\"status\":%d,\"ms\":%d,\"halfHeadCutMs\":%d}%n",
                    status.status(), status.millis(), cut);
            assertEquals(200, status.status());
            assertTrue(status.millis() < 2000, "request took " + status.millis() + " ms");
            assertCutAtTheDeadline(cut);
        }
    }

    /**
     * 64 + 8 squatters holding half a request head (the cap is 64 by default, three quarters of it for connections
     * that have not completed a request): on both endpoints the oldest squatters are closed as new ones come, at
     * most 48 stay, and an honest request on a new connection is answered at once.
     */
    @Test
    void squattersFillingTheCapDoNotLockAnHonestClientOut() throws Exception {
        int cap = LocalHttpServer.Limits.DEFAULT_MAX_CONNECTIONS;
        int untrustedCap = cap * 3 / 4;
        for (InetSocketAddress at : List.of(metrics.address(), (InetSocketAddress) control.localAddress())) {
            boolean isMetrics = at.equals(metrics.address());
            String head = isMetrics ? "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1"
                    : "GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN;
            warmUp(at, head);
            List<Socket> squatters = new ArrayList<>();
            try {
                long since = System.nanoTime();
                for (int i = 0; i < cap + 8; i++) {
                    squatters.add(new Socket(at.getAddress(), at.getPort()));
                }
                RawHttp.Timed honest = RawHttp.request(at, head, Duration.ofSeconds(5));
                int closedEarly = 0;
                for (Socket s : squatters) {
                    if (RawHttp.millisUntilClosed(s, since, Duration.ofMillis(DEADLINE_MS / 2)) >= 0) {
                        closedEarly++;
                    }
                }
                System.out.printf("{\"test\":\"local_connection_cap\",\"endpoint\":\"%s\",\"squatters\":%d,"
                        + "\"closedBeforeTheDeadline\":%d,\"honestStatus\":%d,\"honestMs\":%d}%n",
                        isMetrics ? "metrics" : "control", cap + 8, closedEarly, honest.status(), honest.millis());
                assertEquals(200, honest.status(), "an honest request among " + (cap + 8) + " squatters");
                assertTrue(honest.millis() < 2000, "it took " + honest.millis() + " ms");
                assertTrue(closedEarly >= cap + 8 - untrustedCap, "at most " + untrustedCap
                        + " squatters stay: " + closedEarly + " of " + (cap + 8) + " closed before the deadline");
            } finally {
                for (Socket s : squatters) {
                    s.close();
                }
            }
        }
    }

    /** One request before the measured one: class loading and JIT are not what is measured. */
    private static void warmUp(InetSocketAddress at, String head) throws Exception {
        assertEquals(200, RawHttp.request(at, head, Duration.ofSeconds(10)).status(), "warm-up request");
    }

    private static void assertCutAtTheDeadline(long cut) {
        assertTrue(cut >= 0, "half a head still open " + (DEADLINE_MS + SLACK_MS) + " ms later");
        assertTrue(cut >= DEADLINE_MS - 500, "cut at " + cut + " ms, before the " + DEADLINE_MS + " ms deadline");
    }
}
