package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.GatewayCrash;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.testing.Await;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

import static dev.previewtunnel.ingress.cli.MetricsScrape.scrape;
import static dev.previewtunnel.ingress.cli.MetricsScrape.value;
import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The reconnect state as an operator sees it: the gateway dies, {@code status --json} says
 * {@code reconnecting} with {@code reconnectingSince} and {@code lastError}, the ingress's /metrics endpoint shows
 * no connection up, the slots by state and since when; the gateway comes back on the same address and both say
 * {@code connected} again, with the reconnects counter above 0.
 */
class ReconnectStatusTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    @Test
    void statusAndMetricsShowReconnectingThenConnected() throws Exception {
        TestStack stack = TestStack.start(tmp);
        boolean killed = false;
        // Printed at the end: while `run` runs in-process it owns System.out.
        StringBuilder report = new StringBuilder();
        try {
            Path tokenFile = TestStack.secretFile(tmp, "token", stack.token() + "\n");
            Path grants = TestStack.secretFile(tmp, "grants", stack.grant("default", stack.app.port()) + "\n");
            String dir = tmp.resolve("state").toString();
            RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token-file",
                    tokenFile.toString(), "--grant-file", grants.toString(), "--state-dir", dir,
                    "--metrics-listen", "127.0.0.1:0", "--pool", "2");
            GatewayServer returned = null;
            try {
                JsonNode ready = running.readyLine();
                String metrics = ready.get("metrics").asText();
                HttpClient client = TestStack.proxiedClient(ready.get("proxy").asText(),
                        Path.of(ready.get("credentialsFile").asText()));
                String hello = "http://localhost:" + stack.app.port() + "/hello";
                Await.until("both connections up", Duration.ofSeconds(20),
                        () -> status(dir).path("connected").asInt() == 2);
                JsonNode up = status(dir);
                assertEquals("connected", up.path("state").asText(), up::toString);
                assertFalse(up.has("reconnectingSince"), up::toString);
                assertEquals(0, up.path("reconnects").asLong(), up::toString);
                String before = scrape(metrics);
                assertEquals(0, value(before, "ptun_ingress_tunnel_reconnects_total"), before);
                assertEquals(2, value(before, "ptun_ingress_tunnel_connections_by_state{state=\"connected\"}"), before);
                assertEquals(0, value(before, "ptun_ingress_tunnel_connections_by_state{state=\"draining\"}"), before);
                assertEquals(0, value(before, "ptun_ingress_tunnel_disconnected_since_timestamp_seconds"), before);
                assertEquals(200, get(client, hello).statusCode());

                InetSocketAddress address = stack.gateway.address();
                Instant killedAt = Instant.now().minusSeconds(1);
                GatewayCrash.crash(stack.gateway);
                killed = true;

                Await.until("status says reconnecting", Duration.ofSeconds(20),
                        () -> "reconnecting".equals(status(dir).path("state").asText()));
                Result json = run("status", "--json", "--state-dir", dir);
                assertEquals(0, json.exitCode(), json::toString);
                JsonNode down = JSON.readTree(json.out()).path("tunnel");
                report.append("{\"test\":\"reconnect_status_down\",\"tunnel\":").append(down).append("}\n");
                assertEquals(0, down.path("connected").asInt(), down::toString);
                Instant since = Instant.parse(down.path("reconnectingSince").asText());
                assertFalse(since.isBefore(killedAt) || since.isAfter(Instant.now()), down::toString);
                assertFalse(down.path("lastError").asText().isBlank(), down::toString);
                assertTrue(down.path("reconnects").asLong() >= 1, down::toString);
                String downMetrics = scrape(metrics);
                assertEquals(0, value(downMetrics, "ptun_ingress_tunnel_up"), downMetrics);
                assertEquals(0, value(downMetrics, "ptun_ingress_tunnel_connections_by_state{state=\"connected\"}"),
                        downMetrics);
                double waitingOrConnecting =
                        value(downMetrics, "ptun_ingress_tunnel_connections_by_state{state=\"waiting\"}")
                        + value(downMetrics, "ptun_ingress_tunnel_connections_by_state{state=\"connecting\"}");
                assertEquals(2, waitingOrConnecting, downMetrics);
                assertEquals((double) since.getEpochSecond(),
                        value(downMetrics, "ptun_ingress_tunnel_disconnected_since_timestamp_seconds"), downMetrics);
                assertTrue(value(downMetrics, "ptun_ingress_tunnel_reconnects_total") >= 1, downMetrics);
                // The human form says the same.
                Result table = run("status", "--state-dir", dir);
                assertTrue(table.out().contains("reconnecting (0/2 connections") && table.out().contains(" since ")
                        && table.out().contains("last error: "), table::toString);

                returned = GatewayServer.start(GatewayConfig.defaults(TestStack.ENV, address),
                        stack.keys.verificationKeys(), null, new SimpleMeterRegistry());
                Await.until("status says connected again", Duration.ofSeconds(30),
                        () -> status(dir).path("connected").asInt() == 2);
                JsonNode again = status(dir);
                report.append("{\"test\":\"reconnect_status_up\",\"tunnel\":").append(again).append("}\n");
                assertEquals("connected", again.path("state").asText(), again::toString);
                assertFalse(again.has("reconnectingSince"), again::toString);
                HttpResponse<String> after = get(client, hello);
                assertEquals(200, after.statusCode());
                assertEquals(SampleApp.HELLO_BODY, after.body());
                String upMetrics = scrape(metrics);
                double reconnects = value(upMetrics, "ptun_ingress_tunnel_reconnects_total");
                report.append("{\"test\":\"reconnect_metrics\",\"reconnects\":").append(reconnects).append("}\n");
                assertTrue(reconnects >= 2, "both connections were lost and replaced: " + reconnects);
                assertEquals(1, value(upMetrics, "ptun_ingress_tunnel_up"), upMetrics);
                assertEquals(2, value(upMetrics, "ptun_ingress_tunnel_connections_by_state{state=\"connected\"}"),
                        upMetrics);
                assertEquals(0, value(upMetrics, "ptun_ingress_tunnel_disconnected_since_timestamp_seconds"), upMetrics);
            } finally {
                running.close();
                if (returned != null) {
                    returned.close();
                }
            }
        } finally {
            // A killed gateway has already freed everything (closing it again would use its terminated loops).
            if (killed) {
                stack.app.close();
            } else {
                stack.close();
            }
            System.out.print(report);
        }
    }

    private static JsonNode status(String dir) {
        Result r = run("status", "--json", "--state-dir", dir);
        assertEquals(0, r.exitCode(), r::toString);
        try {
            return JSON.readTree(r.out()).path("tunnel");
        } catch (java.io.IOException e) {
            throw new AssertionError("status --json is not JSON: " + r, e);
        }
    }

    private static HttpResponse<String> get(HttpClient client, String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
