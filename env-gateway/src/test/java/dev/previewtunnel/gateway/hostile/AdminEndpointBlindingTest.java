package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.local.http.MetricsServer;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.gateway.admin.AdminServer;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.local.http.LocalHttpServer;
import dev.previewtunnel.testing.RawHttp;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 4, gateway side: half a request head held on the admin endpoint and on the metrics endpoint (both
 * {@link LocalHttpServer}, started as {@code serve} starts them, here with a 2 s {@code --local-request-timeout})
 * delays neither the other endpoint's nor its own honest requests, and is cut at the deadline.
 */
class AdminEndpointBlindingTest {
    private static final Duration DEADLINE = Duration.ofSeconds(2);
    private static final long SLACK_MS = 3000;

    private GatewayServer gateway;
    private AdminServer admin;
    private MetricsServer metrics;
    private String adminToken;

    @BeforeEach
    void start(@TempDir Path dir) throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        PrometheusMeterRegistry registry = MetricsServer.newRegistry();
        gateway = GatewayServer.start(GatewayConfig.defaults("e-admin", new InetSocketAddress("127.0.0.1", 0)),
                keys.verificationKeys(), null, registry);
        LocalHttpServer.Limits limits = LocalHttpServer.Limits.defaults().withRequestTimeout(DEADLINE);
        admin = AdminServer.start(gateway::status, gateway.revocations(), new InetSocketAddress("127.0.0.1", 0),
                dir.resolve("admin/admin.token"), limits);
        adminToken = Files.readString(admin.tokenFile(), StandardCharsets.US_ASCII).trim();
        metrics = MetricsServer.start(new InetSocketAddress("127.0.0.1", 0), registry, limits);
    }

    @AfterEach
    void stop() {
        if (metrics != null) {
            metrics.close();
        }
        if (admin != null) {
            admin.close();
        }
        if (gateway != null) {
            gateway.close();
        }
    }

    private RawHttp.Timed status() throws Exception {
        return RawHttp.request(admin.address(), "GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                + adminToken, Duration.ofSeconds(5));
    }

    private RawHttp.Timed scrape() throws Exception {
        return RawHttp.request(metrics.address(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1", Duration.ofSeconds(5));
    }

    @Test
    void halfARequestHeadOnAdminOrMetricsDelaysNobodyAndIsCutAtTheDeadline() throws Exception {
        assertEquals(200, status().status(), "warm-up");
        assertEquals(200, scrape().status(), "warm-up");
        try (Socket onAdmin = RawHttp.halfHead(admin.address(), "POST /v1/revoke HTTP/1.1\r\nHost: 127.0.0.1\r\n");
             Socket onMetrics = RawHttp.halfHead(metrics.address(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")) {
            long since = System.nanoTime();
            RawHttp.Timed status = status();
            RawHttp.Timed scrape = scrape();
            long adminCut = RawHttp.millisUntilClosed(onAdmin, since, DEADLINE.plusMillis(SLACK_MS));
            long metricsCut = RawHttp.millisUntilClosed(onMetrics, since, DEADLINE.plusMillis(SLACK_MS));
            System.out.printf("{\"test\":\"gateway_local_half_head\",\"statusMs\":%d,\"scrapeMs\":%d,"
                    + "\"adminCutMs\":%d,\"metricsCutMs\":%d}%n", status.millis(), scrape.millis(), adminCut,
                    metricsCut);
            assertEquals(200, status.status());
            assertEquals(200, scrape.status());
            assertTrue(status.millis() < 2000 && scrape.millis() < 2000,
                    "admin " + status.millis() + " ms, scrape " + scrape.millis() + " ms");
            for (long cut : new long[] {adminCut, metricsCut}) {
                assertTrue(cut >= 0, "half a head still open " + (DEADLINE.toMillis() + SLACK_MS) + " ms later");
                assertTrue(cut >= DEADLINE.toMillis() - 500, "cut at " + cut + " ms, before the deadline");
            }
        }
    }
}
