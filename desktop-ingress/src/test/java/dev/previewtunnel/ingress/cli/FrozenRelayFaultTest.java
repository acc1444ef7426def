package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.testing.RawHttp;
import dev.previewtunnel.testing.SteadyRequests;
import dev.previewtunnel.testing.SteadyRequests.Outcome;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A frozen peer is noticed by what it no longer sends (issue 17, item 1). The ingress reaches the gateway through a
 * {@link FreezableRelay}; freezing it leaves both sockets open and silent. With a keepalive timeout of 2 s
 * (interval 2 s, so the PING goes after 1.5 s of silence) each side must close the dead connection within the
 * timeout plus {@link #SLACK}, with no traffic and with a request every 0.5 s alike: before the fix the timer was
 * reset by what the ingress sent, so steady requests kept the dead connection "connected" for ever, and an idle one
 * took interval + timeout + the codec's graceful close. Open streams end (a download is cut, a request waiting for
 * its answer gets the typed {@code stream_reset} page), and once the relay carries new connections again the next
 * request succeeds on a new connection in well under a second.
 *
 * <p>{@code -Dptun.faults.defaults=true} runs the same with the default keepalive settings (15 s / 20 s), to measure.
 */
class FrozenRelayFaultTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Set: measure with the default settings instead of the short ones (a manual run, see the class comment). */
    static final boolean DEFAULTS = Boolean.getBoolean("ptun.faults.defaults");
    private static final Duration KEEPALIVE = DEFAULTS ? MuxSettings.defaults().pingTimeout() : Duration.ofSeconds(2);
    /** Polling, scheduling and a loaded 2-core machine; the code before the fix needed about 2 s more. */
    private static final long SLACK = 1_000;

    @TempDir
    Path tmp;

    @Test
    @Timeout(180)
    void aFrozenRelayWithNoTrafficIsNoticedWithinTheKeepaliveTimeoutOnBothSides() throws Exception {
        StringBuilder report = new StringBuilder();
        try (TestStack stack = TestStack.start(tmp, new SimpleMeterRegistry(),
                c -> DEFAULTS ? c : c.withMux(c.mux().withKeepAlive(KEEPALIVE, KEEPALIVE)));
             FreezableRelay relay = new FreezableRelay(stack.gateway.address())) {
            String dir = tmp.resolve("state").toString();
            RunningIngress running = startIngress(stack, relay, dir);
            try {
                JsonNode ready = running.readyLine();
                awaitBothConnected(dir);
                // A download under way and a request waiting for its answer, both on the connection about to freeze.
                dev.previewtunnel.sampleapp.ResponseGate gate = stack.app.gate("held", 1, Duration.ofSeconds(60));
                Socket download = IngressCliHarness.getThroughProxy(ready, "localhost:" + stack.app.port(),
                        "/bytes?n=" + (1L << 30));
                Socket held = send(ready, "localhost:" + stack.app.port(), "/gated-bytes?gate=held&n=10");
                InputStream body = download.getInputStream();
                assertTrue(body.readNBytes(64 * 1024).length == 64 * 1024, "the download is flowing");
                assertTrue(gate.awaitArrivals(1, Duration.ofSeconds(20)), "the held request reached the target");
                awaitGatewayStreams(stack, 2);

                long frozeAt = System.nanoTime();
                relay.refuseNew(true); // until the end of the outage: status must show it
                assertEquals(2, relay.freeze()); // --pool 1, --io-threads 2: one connection on each loop
                CompletableFuture<Long> downloadEnded = CompletableFuture.supplyAsync(
                        () -> RawHttp.drainUntilEnd(body));
                CompletableFuture<String> heldAnswer = CompletableFuture.supplyAsync(() -> readAll(held));

                long ingressMillis = awaitMillis(frozeAt, () -> "reconnecting".equals(status(dir).path("state")
                        .asText()));
                long gatewayMillis = awaitMillis(frozeAt, () -> stack.gateway.connectionCount() == 0);
                long downloadMillis = millisSince(frozeAt, downloadEnded.get(20, TimeUnit.SECONDS));
                String answer = heldAnswer.get(20, TimeUnit.SECONDS);
                long answerMillis = millisSince(frozeAt, System.nanoTime());
                report.append(String.format("{\"test\":\"frozen_relay_idle\",\"keepaliveTimeoutMillis\":%d,"
                                + "\"ingressDetectedMillis\":%d,\"gatewayDetectedMillis\":%d,"
                                + "\"downloadEndedMillis\":%d,\"heldAnsweredByMillis\":%d}%n",
                        KEEPALIVE.toMillis(), ingressMillis, gatewayMillis, downloadMillis, answerMillis));

                long bound = KEEPALIVE.toMillis() + SLACK;
                assertTrue(ingressMillis <= bound, "ingress noticed after " + ingressMillis + " ms");
                assertTrue(gatewayMillis <= bound, "gateway noticed after " + gatewayMillis + " ms");
                assertTrue(downloadMillis <= bound, "the download ended after " + downloadMillis + " ms");
                assertTrue(answer.startsWith("HTTP/1.1 502") && answer.toLowerCase().contains("ptun-error: "
                        + "stream_reset"), answer.lines().findFirst().orElse(answer));

                // The relay carries new connections again: the next request goes over a new one at once.
                relay.refuseNew(false);
                long askedAt = System.nanoTime();
                HttpClient client = TestStack.proxiedClient(ready.get("proxy").asText(),
                        Path.of(ready.get("credentialsFile").asText()));
                HttpResponse<String> after = get(client, "http://localhost:" + stack.app.port() + "/hello");
                long afterMillis = millisSince(askedAt, System.nanoTime());
                report.append(String.format("{\"test\":\"frozen_relay_idle_next_request\",\"status\":%d,"
                        + "\"millis\":%d}%n", after.statusCode(), afterMillis));
                assertEquals(200, after.statusCode());
                assertTrue(afterMillis < 1_000, "the next request took " + afterMillis + " ms");
                download.close();
            } finally {
                running.close();
                System.out.print(report);
            }
        }
    }

    @Test
    @Timeout(180)
    void aFrozenRelayUnderSteadyRequestsIsNoticedWithinTheKeepaliveTimeout() throws Exception {
        StringBuilder report = new StringBuilder();
        SteadyRequests requests = null;
        try (TestStack stack = TestStack.start(tmp, new SimpleMeterRegistry(),
                c -> DEFAULTS ? c : c.withMux(c.mux().withKeepAlive(KEEPALIVE, KEEPALIVE)));
             FreezableRelay relay = new FreezableRelay(stack.gateway.address())) {
            String dir = tmp.resolve("state").toString();
            RunningIngress running = startIngress(stack, relay, dir);
            try {
                JsonNode ready = running.readyLine();
                awaitBothConnected(dir);
                HttpClient client = TestStack.proxiedClient(ready.get("proxy").asText(),
                        Path.of(ready.get("credentialsFile").asText()));
                String hello = "http://localhost:" + stack.app.port() + "/hello";
                assertEquals(200, get(client, hello).statusCode());

                long frozeAt = System.nanoTime();
                assertEquals(2, relay.freeze()); // --pool 1, --io-threads 2: one connection on each loop
                // A request every 0.5 s, each on its own: what kept the dead connection alive before the fix.
                requests = SteadyRequests.start(client, URI.create(hello), Duration.ofMillis(500),
                        Duration.ofSeconds(20));
                long ingressMillis = awaitLost(dir, frozeAt);
                long detectedAt = frozeAt + TimeUnit.MILLISECONDS.toNanos(ingressMillis);
                // Requests go on for 2 s after the detection, on the new connection.
                long until = detectedAt + TimeUnit.SECONDS.toNanos(2);
                dev.previewtunnel.testing.Await.until("two more seconds of requests", Duration.ofSeconds(30),
                        () -> System.nanoTime() >= until);
                List<Outcome> sent = requests.stopAndCollect(Duration.ofSeconds(30));
                long worstAfter = 0;
                int afterCount = 0;
                for (Outcome o : sent) {
                    if (o.sentAt() > detectedAt) {
                        afterCount++;
                        worstAfter = Math.max(worstAfter, o.millis());
                        assertEquals(200, o.status(), "a request sent after the detection");
                    }
                }
                report.append(String.format("{\"test\":\"frozen_relay_steady_requests\",\"keepaliveTimeoutMillis\":"
                                + "%d,\"ingressDetectedMillis\":%d,\"requests\":%d,\"requestsAfterDetection\":%d,"
                                + "\"slowestAfterDetectionMillis\":%d}%n", KEEPALIVE.toMillis(), ingressMillis,
                        sent.size(), afterCount, worstAfter));
                assertTrue(ingressMillis <= KEEPALIVE.toMillis() + SLACK,
                        "ingress noticed after " + ingressMillis + " ms");
                assertTrue(afterCount >= 2, "requests after the detection: " + afterCount);
                assertTrue(worstAfter < 1_000, "a request after the detection took " + worstAfter + " ms");
            } finally {
                if (requests != null) {
                    requests.close();
                }
                running.close();
                System.out.print(report);
            }
        }
    }

    private RunningIngress startIngress(TestStack stack, FreezableRelay relay, String dir) throws Exception {
        Path tokenFile = TestStack.secretFile(tmp, "token", stack.token() + "\n");
        Path grants = TestStack.secretFile(tmp, "grants", stack.grant("default", stack.app.port()) + "\n");
        URI gateway = URI.create(stack.url());
        String viaRelay = "ws://127.0.0.1:" + relay.port() + gateway.getRawPath();
        String[] args = {"run", "--gateway", viaRelay, "--token-file", tokenFile.toString(),
                "--grant-file", grants.toString(), "--state-dir", dir, "--pool", "1", "--io-threads", "2"};
        return RunningIngress.start(DEFAULTS ? args : dev.previewtunnel.cli.InProcessCli.concat(args,
                "--keepalive-interval", "2s", "--keepalive-timeout", "2s"));
    }

    static JsonNode status(String dir) {
        Result r = run("status", "--json", "--state-dir", dir);
        assertEquals(0, r.exitCode(), r::toString);
        try {
            return JSON.readTree(r.out()).path("tunnel");
        } catch (IOException e) {
            throw new AssertionError("status --json is not JSON: " + r, e);
        }
    }

    /**
     * --pool 1 keeps a connection on each of the ingress's event loops, two with --io-threads 2: both relayed before
     * the freeze.
     */
    private static void awaitBothConnected(String dir) {
        dev.previewtunnel.testing.Await.until("both tunnel connections up", Duration.ofSeconds(20),
                () -> status(dir).path("connected").asInt() == 2);
    }

    static void awaitConnected(String dir) {
        dev.previewtunnel.testing.Await.until("the tunnel connection up", Duration.ofSeconds(20),
                () -> "connected".equals(status(dir).path("state").asText()));
    }

    /**
     * Milliseconds from {@code since} until the connection has been lost: counted in {@code reconnects} by status
     * (a state poll can miss the moments between the loss and the new connection a waiting request asks for).
     */
    static long awaitLost(String dir, long since) {
        return awaitMillis(since, () -> status(dir).path("reconnects").asLong() >= 1);
    }

    private static long awaitMillis(long since, java.util.function.BooleanSupplier condition) {
        dev.previewtunnel.testing.Await.until("the dead connection noticed", KEEPALIVE.multipliedBy(3).plusSeconds(14),
                condition);
        return millisSince(since, System.nanoTime());
    }

    private static void awaitGatewayStreams(TestStack stack, int streams) {
        dev.previewtunnel.testing.Await.until(streams + " streams open at the gateway", Duration.ofSeconds(20),
                () -> stack.gateway.liveStreams().size() >= streams);
    }

    static long millisSince(long startNanos, long endNanos) {
        return TimeUnit.NANOSECONDS.toMillis(endNanos - startNanos);
    }

    private static String readAll(Socket socket) {
        try (socket) {
            return new String(socket.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return "reset: " + e;
        }
    }

    /** A browser connection that asked for {@code pathAndQuery} and has not read anything yet. */
    private static Socket send(JsonNode ready, String target, String pathAndQuery) throws IOException {
        InetSocketAddress proxy = IngressCliHarness.proxyAddress(ready);
        Socket browser = new Socket(proxy.getAddress(), proxy.getPort());
        browser.setSoTimeout(30_000);
        OutputStream out = browser.getOutputStream();
        out.write(("GET http://" + target + pathAndQuery + " HTTP/1.1\r\nHost: " + target + "\r\n"
                + IngressCliHarness.proxyAuthorization(ready) + "\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        return browser;
    }

    private static HttpResponse<String> get(HttpClient client, String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
