package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.local.http.MetricsServer;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.testing.Await;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;

import static dev.previewtunnel.ingress.cli.MetricsScrape.scrape;
import static dev.previewtunnel.ingress.cli.MetricsScrape.value;
import static dev.previewtunnel.ingress.cli.MetricsScrape.sum;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Scrapes both /metrics endpoints (the gateway's and the ingress's, from {@code run --metrics-listen}) in the
 * middle of a large download through the real chain, target to browser: the byte counters, live-stream gauges and
 * open histograms move while the transfer runs, and a refused stream is counted by its code on both sides.
 */
class TransferMetricsTest {
    private static final long SIZE = 256L * 1024 * 1024;

    @TempDir
    Path tmp;

    @Test
    void countersMoveDuringATransfer() throws Exception {
        PrometheusMeterRegistry gatewayRegistry = MetricsServer.newRegistry();
        try (TestStack stack = TestStack.start(tmp, gatewayRegistry);
             MetricsServer gatewayMetrics = MetricsServer.start(new InetSocketAddress("127.0.0.1", 0), gatewayRegistry)) {
            int closed = TestStack.closedPort();
            Path tokenFile = TestStack.secretFile(tmp, "token", stack.token() + "\n");
            Path grants = TestStack.secretFile(tmp, "grants", stack.grant("default", stack.app.port()) + "\n"
                    + stack.grant("default", closed) + "\n");
            RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token-file",
                    tokenFile.toString(), "--grant-file", grants.toString(), "--state-dir", tmp.resolve("s").toString(),
                    "--metrics-listen", "127.0.0.1:0", "--pool", "1", "--io-threads", "2");
            try {
                JsonNode ready = running.readyLine();
                String ingressMetrics = ready.get("metrics").asText();
                assertTrue(ingressMetrics.matches("http://127\\.0\\.0\\.1:\\d+/metrics"), ingressMetrics);
                HttpClient client = TestStack.proxiedClient(ready.get("proxy").asText(),
                        Path.of(ready.get("credentialsFile").asText()));
                Await.until("the tunnel connection", Duration.ofSeconds(20),
                        () -> value(scrape(ingressMetrics), "ptun_ingress_tunnel_up") == 1);

                HttpResponse<InputStream> response = client.send(HttpRequest.newBuilder(
                                URI.create("http://localhost:" + stack.app.port() + "/bytes?n=" + SIZE))
                        .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofInputStream());
                assertEquals(200, response.statusCode());
                try (InputStream body = response.body()) {
                    assertEquals(1 << 20, body.readNBytes(1 << 20).length);

                    String in1 = scrape(ingressMetrics);
                    String gw1 = scrape(gatewayMetrics.url());
                    double fromGateway1 = value(in1, "ptun_ingress_stream_bytes_total{direction=\"from_gateway\"}");
                    double fromTarget1 = value(gw1, "ptun_gateway_stream_bytes_total{direction=\"from_target\"}");
                    assertTrue(fromGateway1 >= 1 << 20 && fromGateway1 < SIZE, "in the middle: " + fromGateway1);
                    assertTrue(fromTarget1 >= fromGateway1 && fromTarget1 < SIZE, "in the middle: " + fromTarget1);
                    assertTrue(value(in1, "ptun_ingress_stream_bytes_total{direction=\"to_gateway\"}") > 0, "the GET");
                    assertTrue(value(gw1, "ptun_gateway_stream_bytes_total{direction=\"to_target\"}") > 0, "the GET");
                    assertEquals(1, value(in1, "ptun_ingress_streams_live"), "the transfer's stream is live");
                    assertEquals(1, value(gw1, "ptun_gateway_streams_live"), "and on the gateway");
                    // --pool 1 still keeps a connection on each of the ingress's two event loops (--io-threads 2).
                    assertEquals(2, value(in1, "ptun_ingress_tunnel_connections"));
                    assertEquals(2, value(gw1, "ptun_gateway_connections"));
                    assertTrue(value(in1, "ptun_ingress_streams_opened_total") >= 1);
                    assertTrue(value(gw1, "ptun_gateway_streams_opened_total") >= 1);
                    assertTrue(value(gw1, "ptun_gateway_dials_total") >= 1);
                    assertTrue(value(in1, "ptun_ingress_stream_open_seconds_count{outcome=\"ok\"}") >= 1);
                    assertTrue(value(in1, "ptun_ingress_stream_first_byte_seconds_count") >= 1);
                    assertTrue(value(gw1, "ptun_gateway_stream_open_seconds_count{outcome=\"ok\"}") >= 1);
                    assertTrue(in1.contains("ptun_ingress_stream_open_seconds_bucket{outcome=\"ok\",le=\"0.1\"}"),
                            "a histogram with buckets");
                    assertTrue(in1.contains("ptun_ingress_tunnel_reconnects_total 0.0"), in1);

                    // Keep reading: the counters move while the transfer runs.
                    assertEquals(16 << 20, body.readNBytes(16 << 20).length);
                    Await.until("ingress bytes moving", Duration.ofSeconds(20), () -> value(scrape(ingressMetrics),
                            "ptun_ingress_stream_bytes_total{direction=\"from_gateway\"}") > fromGateway1 + (8 << 20));
                    Await.until("gateway bytes moving", Duration.ofSeconds(20), () -> value(scrape(gatewayMetrics.url()),
                            "ptun_gateway_stream_bytes_total{direction=\"from_target\"}") > fromTarget1 + (8 << 20));
                }

                // A refused stream is counted by its code on both sides.
                HttpResponse<String> refused = client.send(HttpRequest.newBuilder(
                        URI.create("http://localhost:" + closed + "/")).timeout(Duration.ofSeconds(20)).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(502, refused.statusCode(), refused::body);
                Await.until("refusals counted", Duration.ofSeconds(10), () ->
                        value(scrape(ingressMetrics), "ptun_ingress_streams_refused_total{code=\"target_refused\"}") == 1
                        && sum(scrape(gatewayMetrics.url()),
                        "ptun_gateway_streams_refused_total{code=\"target_refused\",") == 1);
            } finally {
                running.close();
            }
        }
    }
}
