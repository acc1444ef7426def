package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.gateway.GatewayCrash;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.testing.Await;
import dev.previewtunnel.testing.SteadyRequests;
import dev.previewtunnel.testing.SteadyRequests.Outcome;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.ingress.cli.FrozenRelayFaultTest.millisSince;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A gateway restarted after an outage is used at once (issue 17, item 2). Under a request every 250 ms the gateway
 * is killed, stays down {@link #OUTAGE} (10 s), and comes back on the same address. By then the pool's reconnect backoff
 * has grown to seconds (the step doubles from 100 ms per refused attempt), which is what requests waited for before
 * the fix: 502s for up to 15 s after the gateway was back. Now a request that finds no connection asks for an
 * attempt at once (at most one per 250 ms) and waits for a connection up to the open timeout: the first 200 must
 * come within a second of the gateway listening again, requests issued less than an open timeout before that
 * must succeed (they waited), and those that got a 502 must have waited the open timeout first.
 */
class GatewayRestartFaultTest {
    /** {@code -Dptun.faults.defaults=true}: the default open timeout (10 s), to measure. */
    private static final Duration OPEN_TIMEOUT = FrozenRelayFaultTest.DEFAULTS ? Duration.ofSeconds(10)
            : Duration.ofSeconds(3);
    /** Long enough for early requests to time out, and for the backoff to have grown to seconds. */
    private static final Duration OUTAGE = OPEN_TIMEOUT.plusSeconds(7);

    @TempDir
    Path tmp;

    @Test
    @Timeout(180)
    void theFirstRequestAfterTheGatewayIsBackSucceedsWithoutWaitingForTheBackoff() throws Exception {
        StringBuilder report = new StringBuilder();
        SteadyRequests requests = null;
        TestStack stack = TestStack.start(tmp);
        GatewayServer returned = null;
        try {
            Path tokenFile = TestStack.secretFile(tmp, "token", stack.token() + "\n");
            Path grants = TestStack.secretFile(tmp, "grants", stack.grant("default", stack.app.port()) + "\n");
            String dir = tmp.resolve("state").toString();
            RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token-file",
                    tokenFile.toString(), "--grant-file", grants.toString(), "--state-dir", dir, "--pool", "2",
                    "--open-timeout", OPEN_TIMEOUT.toSeconds() + "s"); // 10s is the default
            try {
                JsonNode ready = running.readyLine();
                FrozenRelayFaultTest.awaitConnected(dir);
                HttpClient client = TestStack.proxiedClient(ready.get("proxy").asText(),
                        Path.of(ready.get("credentialsFile").asText()));
                String hello = "http://localhost:" + stack.app.port() + "/hello";

                requests = SteadyRequests.start(client, URI.create(hello), Duration.ofMillis(250),
                        Duration.ofSeconds(30));

                InetSocketAddress address = stack.gateway.address();
                long killedAt = System.nanoTime();
                GatewayCrash.crash(stack.gateway);
                long backAt = killedAt + OUTAGE.toNanos();
                Await.until("the outage", OUTAGE.plusSeconds(5), () -> System.nanoTime() >= backAt);
                returned = GatewayServer.start(GatewayConfig.defaults(TestStack.ENV, address),
                        stack.keys.verificationKeys(), null, new SimpleMeterRegistry());
                long listeningAt = System.nanoTime();
                long until = listeningAt + TimeUnit.SECONDS.toNanos(2);
                Await.until("two more seconds of requests", Duration.ofSeconds(30), () -> System.nanoTime() >= until);
                List<Outcome> sent = requests.stopAndCollect(Duration.ofSeconds(40));
                long firstOkAfterBack = Long.MAX_VALUE;
                int waitedAndSucceeded = 0;
                int failed = 0;
                long shortestFailureMillis = Long.MAX_VALUE;
                List<String> wrong = new ArrayList<>(); // asserted after the figures are reported
                for (Outcome o : sent) {
                    if (o.status() == 200 && o.at() >= listeningAt) {
                        firstOkAfterBack = Math.min(firstOkAfterBack, millisSince(listeningAt, o.at()));
                    }
                    if (o.sentAt() > killedAt && o.sentAt() < listeningAt) {
                        long waited = o.millis();
                        if (o.status() == 200) {
                            waitedAndSucceeded++;
                        } else {
                            failed++;
                            shortestFailureMillis = Math.min(shortestFailureMillis, waited);
                            if (o.status() != 502) {
                                wrong.add("a request during the outage got " + o.status());
                            }
                        }
                        // Those with more than a second of their open timeout left when it came back.
                        if (listeningAt - o.sentAt() < OPEN_TIMEOUT.toNanos() - TimeUnit.SECONDS.toNanos(1)
                                && o.status() != 200) {
                            wrong.add("a request " + millisSince(o.sentAt(), listeningAt) + " ms before the gateway "
                                    + "was back got " + o.status() + " after " + waited + " ms instead of waiting");
                        }
                    }
                    if (o.sentAt() >= listeningAt && o.status() != 200) {
                        wrong.add("a request after the gateway was back got " + o.status());
                    }
                }
                report.append(String.format("{\"test\":\"gateway_restart\",\"outageMillis\":%d,\"openTimeoutMillis\":"
                                + "%d,\"requests\":%d,\"firstOkAfterBackMillis\":%d,\"outageRequestsThatWaitedAnd"
                                + "Succeeded\":%d,\"outageRequestsFailed\":%d,\"shortestFailureMillis\":%d}%n",
                        OUTAGE.toMillis(), OPEN_TIMEOUT.toMillis(), sent.size(), firstOkAfterBack, waitedAndSucceeded,
                        failed, failed == 0 ? -1 : shortestFailureMillis));
                assertEquals(List.of(), wrong);
                assertTrue(firstOkAfterBack < 1_000, "first 200 " + firstOkAfterBack + " ms after the gateway was back");
                assertTrue(waitedAndSucceeded >= 4, "outage requests that waited and succeeded: " + waitedAndSucceeded);
                assertTrue(failed > 0 && shortestFailureMillis >= OPEN_TIMEOUT.toMillis() - 100,
                        failed + " failed during the outage, the quickest after " + shortestFailureMillis + " ms");
            } finally {
                if (requests != null) {
                    requests.close();
                }
                running.close();
                System.out.print(report);
            }
        } finally {
            stack.close();
            if (returned != null) {
                returned.close();
            }
        }
    }

}
