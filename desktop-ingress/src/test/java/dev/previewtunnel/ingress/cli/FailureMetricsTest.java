package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.local.http.MetricsServer;
import dev.previewtunnel.grants.GrantFailure;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.testing.Await;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.ingress.cli.MetricsScrape.scrape;
import static dev.previewtunnel.ingress.cli.MetricsScrape.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The failure and flow-control metrics, scraped from both /metrics endpoints: a grant refused by the gateway and a
 * connection token refused at upgrade are counted by reason (from a series registered at 0, so Prometheus'
 * increase() sees the first one), and a reader that stops reading makes the stall histograms move, the gateway's
 * for a download the browser does not read, the ingress's for an upload the target does not read.
 */
class FailureMetricsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int STALL_BYTES = 24 << 20;

    @TempDir
    Path tmp;

    @Test
    void refusedGrantsAndTokensAreCountedByReasonFromZero() throws Exception {
        PrometheusMeterRegistry registry = MetricsServer.newRegistry();
        try (TestStack stack = TestStack.start(tmp, registry);
             MetricsServer metrics = MetricsServer.start(new InetSocketAddress("127.0.0.1", 0), registry)) {
            String grantFailure = "ptun_gateway_grant_failures_total{reason=\"grant_wrong_environment\"}";
            String tokenFailure = "ptun_gateway_token_failures_total{reason=\"token_wrong_environment\"}";
            String before = scrape(metrics.url());
            for (GrantFailure f : GrantFailure.values()) {
                assertEquals(0, value(before, "ptun_gateway_grant_failures_total{reason=\"" + f.code() + "\"}"),
                        "registered at 0 before any failure: " + f.code());
                assertEquals(0, value(before, "ptun_gateway_token_failures_total{reason=\"" + f.tokenCode() + "\"}"),
                        "registered at 0 before any failure: " + f.tokenCode());
            }

            // A grant for another environment: the ingress passes it on, the gateway refuses the stream.
            String otherEnv = stack.issuer.issueGrant(GrantSpec.tcp("other-env", "default", "localhost",
                    stack.app.port()), Duration.ofMinutes(10));
            RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token", stack.token(),
                    "--grant", otherEnv, "--state-dir", tmp.resolve("s").toString(), "--pool", "1",
                    "--io-threads", "2");
            try {
                JsonNode ready = running.readyLine();
                HttpClient client = TestStack.proxiedClient(ready.get("proxy").asText(),
                        Path.of(ready.get("credentialsFile").asText()));
                // --pool 1 still keeps a connection on each of the ingress's two event loops (--io-threads 2).
                Await.until("the tunnel connections", Duration.ofSeconds(20),
                        () -> stack.gateway.connectionCount() == 2);
                HttpResponse<String> refused = client.send(HttpRequest.newBuilder(
                                URI.create("http://localhost:" + stack.app.port() + "/hello"))
                        .timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString());
                assertEquals(403, refused.statusCode());
            } finally {
                running.close();
            }
            Await.until("the grant failure counted", Duration.ofSeconds(10),
                    () -> value(scrape(metrics.url()), grantFailure) == 1);

            // A connection token for another environment: refused at the upgrade.
            EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
            try {
                TunnelClient tunnels = new TunnelClient(group, NioSocketChannel.class, MuxSettings.defaults());
                var attempt = tunnels.connect(URI.create(stack.url()),
                        stack.issuer.issueConnectionToken("other-env", Duration.ofHours(1)), null,
                        Duration.ofSeconds(10)).awaitUninterruptibly();
                assertFalse(attempt.isSuccess(), "the upgrade was refused");
            } finally {
                group.shutdownGracefully(0, 0, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
            }
            String after = scrape(metrics.url());
            assertEquals(1, value(after, tokenFailure), "the refused token is counted by its reason");
            assertEquals(1, value(after, grantFailure));
            assertEquals(0, value(after, "ptun_gateway_grant_failures_total{reason=\"grant_expired\"}"),
                    "other reasons stay at 0");
        }
    }

    @Test
    void aStalledReaderMovesTheStallHistogramsOnBothSides() throws Exception {
        PrometheusMeterRegistry registry = MetricsServer.newRegistry();
        try (TestStack stack = TestStack.start(tmp, registry);
             MetricsServer gatewayMetrics = MetricsServer.start(new InetSocketAddress("127.0.0.1", 0), registry);
             ServerSocket target = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            target.setReceiveBufferSize(16 << 10); // small kernel buffers: the stall comes sooner
            Path state = tmp.resolve("s");
            RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token", stack.token(),
                    "--grant", stack.grant("default", target.getLocalPort()), "--state-dir", state.toString(),
                    "--metrics-listen", "127.0.0.1:0", "--pool", "1", "--io-threads", "2");
            try {
                JsonNode ready = running.readyLine();
                String ingressMetrics = ready.get("metrics").asText();
                String gatewayUrl = gatewayMetrics.url();
                String gwStalls = "ptun_gateway_stream_stalled_seconds_count";
                String inStalls = "ptun_ingress_stream_stalled_seconds_count";
                String gwStalledNow = "ptun_gateway_streams_stalled";
                String inStalledNow = "ptun_ingress_streams_stalled";
                assertEquals(0, value(scrape(gatewayUrl), gwStalls));
                assertEquals(0, value(scrape(ingressMetrics), inStalls));
                assertEquals(0, value(scrape(gatewayUrl), gwStalledNow));
                assertEquals(0, value(scrape(ingressMetrics), inStalledNow));

                try (Socket browser = connect(ready, target.getLocalPort());
                     Socket app = target.accept()) {
                    browser.setSoTimeout(30_000);
                    app.setSoTimeout(30_000);

                    // Download the browser does not read: the gateway reads the target while its stream is
                    // writable, and everything behind it holds at most ~6 MiB (the ingress's browser socket: send
                    // buffer up to tcp_wmem's 4 MiB and its 512 KiB write mark; the 1 MiB stream window; the
                    // gateway stream's 512 KiB mark), so 24 MiB must leave the gateway's stream unwritable, and it
                    // stays so while the browser does not read. Waited for as the stall itself: a byte-count gap
                    // is not guaranteed (the ingress returns window only in halves, so up to 512 KiB of it can be
                    // consumed and unreturned, which a "window + 64 KiB" gap wrongly demanded).
                    CompletableFuture<Void> down = CompletableFuture.runAsync(() -> write(app, STALL_BYTES));
                    Await.until("the gateway's stream stalled by the browser", Duration.ofSeconds(30),
                            () -> value(scrape(gatewayUrl), gwStalledNow) == 1);
                    assertEquals(STALL_BYTES, browser.getInputStream().readNBytes(STALL_BYTES).length);
                    down.get(30, TimeUnit.SECONDS);
                    Await.until("the gateway's stall recorded, and over", Duration.ofSeconds(10), () -> {
                        String gw = scrape(gatewayUrl);
                        return value(gw, gwStalls) >= 1 && value(gw, gwStalledNow) == 0;
                    });

                    // Upload the target does not read: the same on the desktop's side (the gateway's target
                    // socket, its 512 KiB mark, the window and the ingress stream's mark hold about as little).
                    CompletableFuture<Void> up = CompletableFuture.runAsync(() -> write(browser, STALL_BYTES));
                    Await.until("the ingress's stream stalled by the target", Duration.ofSeconds(30),
                            () -> value(scrape(ingressMetrics), inStalledNow) == 1);
                    assertEquals(STALL_BYTES, app.getInputStream().readNBytes(STALL_BYTES).length);
                    up.get(30, TimeUnit.SECONDS);
                    Await.until("the ingress's stall recorded, and over", Duration.ofSeconds(10), () -> {
                        String in = scrape(ingressMetrics);
                        return value(in, inStalls) >= 1 && value(in, inStalledNow) == 0;
                    });
                }
                assertTrue(value(scrape(gatewayUrl), "ptun_gateway_stream_stalled_seconds_sum") > 0);
                assertTrue(value(scrape(ingressMetrics), "ptun_ingress_stream_stalled_seconds_sum") > 0);
            } finally {
                running.close();
            }
        }
    }

    /** A CONNECT tunnel through the ingress's proxy to localhost:port, answered 200. */
    private static Socket connect(JsonNode ready, int port) throws Exception {
        String auth = IngressCliHarness.proxyAuthorization(ready);
        Socket browser = new Socket();
        browser.setReceiveBufferSize(16 << 10); // small kernel buffers: the stall comes sooner
        browser.connect(IngressCliHarness.proxyAddress(ready));
        OutputStream out = browser.getOutputStream();
        out.write(("CONNECT localhost:" + port + " HTTP/1.1\r\nHost: localhost:" + port
                + "\r\n" + auth + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        String head = IngressCliHarness.readHead(browser.getInputStream());
        assertTrue(head.startsWith("HTTP/1.1 200"), head);
        return browser;
    }

    private static void write(Socket socket, int bytes) {
        try {
            OutputStream out = socket.getOutputStream();
            byte[] chunk = new byte[64 << 10];
            for (int done = 0; done < bytes; done += chunk.length) {
                out.write(chunk, 0, Math.min(chunk.length, bytes - done));
            }
            out.flush();
        } catch (Exception e) {
            throw new AssertionError("write", e);
        }
    }
}
