package dev.previewtunnel.gateway.hostile;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.GatewayMetrics;
import dev.previewtunnel.mux.audit.AuditLog;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import dev.previewtunnel.sampleapp.RawEchoServer;
import dev.previewtunnel.testing.Await;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 3: a connection-token holder without a valid grant floods stream opens with a bad-signature grant
 * across several reconnecting connections. The gateway verifies at most its failure budget per second for that
 * token (then refuses unverified during the cool-down), another token's streams keep opening promptly, and the
 * audit log gets one line per kind of refusal plus summary lines, not one line per refusal.
 *
 * <p>Verifications are counted by the gateway's {@code ptun_gateway_grant_verifications_total{outcome}} (every
 * failed one is a signature check: failures are never cached). Each run prints one JSON line with the figures
 * docs/security.md quotes (gateway threads' CPU time over the flood, the honest token's open latencies).
 */
class GrantFloodTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Failed verifications per second per token in these tests (the default is 100), and its cool-down. */
    private static final int BUDGET = 20;
    private static final Duration COOL_DOWN = Duration.ofSeconds(2);

    @TempDir
    Path dir;
    private RawEchoServer echo;
    private TokenFloodGateway gw;

    @BeforeEach
    void start() throws Exception {
        echo = RawEchoServer.start("127.0.0.1", 0);
        gw = new TokenFloodGateway(dir, l -> l.withTokenLimits(l.connectionsPerToken(), BUDGET, COOL_DOWN,
                l.tokenFailuresPerSecond()));
    }

    @AfterEach
    void stop() {
        try {
            if (gw != null) {
                gw.close();
            }
        } finally {
            echo.close();
        }
    }

    @Test
    void badGrantFloodAcrossReconnectsStaysWithinTheBudgetWhileAnotherTokenOpensPromptly() throws Exception {
        Authority target = new Authority("127.0.0.1", echo.port());
        String attacker = gw.newToken();
        String honestGrant = gw.grant("honest", echo.port());
        String badGrant = TokenFloodGateway.badSignature(gw.grant("attacker", echo.port()));
        TunnelConnection honest = gw.connectHonest(gw.newToken());
        GatewayMetrics metrics = gw.gateway.metrics();
        // Warm up the honest path (its grant verifies once, then is cached), so latencies below are steady state.
        SecurityOpen.openAndClose(honest, target, honestGrant);
        List<Long> quietMillis = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            long t0 = System.nanoTime();
            SecurityOpen.openAndClose(honest, target, honestGrant);
            quietMillis.add((System.nanoTime() - t0) / 1_000_000);
        }
        Collections.sort(quietMillis);

        long failedBefore = metrics.grantVerifications(false);
        long cpuBefore = TokenFloodGateway.gatewayCpuNanos();
        long start = System.nanoTime();
        BadGrantFlood flood = new BadGrantFlood(gw, attacker, badGrant, target, 4, 32, 250, 3000,
                Duration.ofSeconds(40)).start();
        List<Long> honestMillis = new ArrayList<>();
        while (flood.running()) {
            long t0 = System.nanoTime();
            SecurityOpen.openAndClose(honest, target, honestGrant);
            honestMillis.add((System.nanoTime() - t0) / 1_000_000);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // paces the honest client, waits on nothing
        }
        flood.join();
        double seconds = (System.nanoTime() - start) / 1e9;
        long cpuMillis = (TokenFloodGateway.gatewayCpuNanos() - cpuBefore) / 1_000_000;
        long verifiedFailures = metrics.grantVerifications(false) - failedBefore;
        Collections.sort(honestMillis);
        System.out.println(JSON.createObjectNode()
                .put("case", "bad-grant-flood")
                .put("opens", flood.answered.get())
                .put("connections", flood.connections.get())
                .put("seconds", Math.round(seconds * 100) / 100.0)
                .put("failedVerifications", verifiedFailures)
                .put("coolDownRefusals", flood.coolDownRefused.get())
                .put("gatewayCpuMillis", cpuMillis)
                .put("gatewayCores", Math.round(cpuMillis / (seconds * 10)) / 100.0)
                .put("quietP50Millis", quietMillis.get(quietMillis.size() / 2))
                .put("honestOpens", honestMillis.size())
                .put("honestP50Millis", honestMillis.isEmpty() ? -1 : honestMillis.get(honestMillis.size() / 2))
                .put("honestMaxMillis", honestMillis.isEmpty() ? -1 : honestMillis.get(honestMillis.size() - 1))
                .toString());

        assertEquals(3000, flood.answered.get(), "every flood open was answered");
        assertEquals(0, flood.accepted.get() + flood.other.get(), "only grant and cool-down refusals");
        assertTrue(flood.connections.get() >= 8, "the flood reconnected: " + flood.connections.get());
        long bound = (long) Math.ceil(BUDGET * (seconds + 1));
        assertTrue(verifiedFailures <= bound, verifiedFailures + " failed verifications in " + seconds
                + " s: more than the budget of " + BUDGET + "/s (" + bound + ")");
        assertEquals(verifiedFailures, flood.grantRefused.get(), "each grant refusal was one verification");
        assertTrue(flood.coolDownRefused.get() > 0, "the rest was refused unverified");
        assertFalse(honestMillis.isEmpty(), "the honest token opened streams during the flood");
    }

    @Test
    void aFloodIsAuditedAsOneLinePerKindThenSummaries() throws Exception {
        Authority target = new Authority("127.0.0.1", echo.port());
        String badGrant = TokenFloodGateway.badSignature(gw.grant("attacker", echo.port()));
        String signature = badGrant.substring(badGrant.lastIndexOf('.') + 1);
        try (AuditLines audit = new AuditLines()) {
            BadGrantFlood flood = new BadGrantFlood(gw, gw.newToken(), badGrant, target, 1, 32, 300, 300,
                    Duration.ofSeconds(30)).start();
            flood.join();
            assertEquals(300, flood.answered.get());
            // Each refusal is either a first line or counted in a summary, which follows within the window.
            Await.until("summaries covering all 300 refusals", Duration.ofSeconds(20),
                    () -> audit.refusalsCovered() == 300);
            List<JsonNode> refusals = audit.streamRefusals();
            long firsts = refusals.stream().filter(n -> !n.has("repeated")).count();
            long summaries = refusals.size() - firsts;
            System.out.println(JSON.createObjectNode().put("case", "bad-grant-flood-audit").put("refusals", 300)
                    .put("lines", refusals.size()).put("firstLines", firsts).put("summaryLines", summaries)
                    .toString());
            // Two kinds: the verified refusals (grant_refused) and the cool-down ones (too_many_streams).
            assertEquals(2, firsts, "one full line per kind: " + refusals);
            assertTrue(summaries >= 1 && summaries <= 4, "a summary per kind and window: " + refusals);
            for (JsonNode n : refusals) {
                assertFalse(n.path("tokenId").asText().isEmpty(), "keyed by the connection token's id");
            }
            assertTrue(audit.lines.stream().noneMatch(l -> l.contains(signature)), "no grant in the audit log");
        }
    }

    @Test
    void refusalsOfAGrantThatVerifiedSpendNoBudget() throws Exception {
        Authority target = new Authority("127.0.0.1", echo.port());
        TunnelConnection c = gw.connect(gw.newToken());
        String revoked = gw.grant("revoked-session", echo.port());
        SecurityOpen.openAndClose(c, target, revoked);
        gw.gateway.revokeSession("revoked-session");
        // An ingress retrying a revoked session's grant, far beyond the budget: each is refused grant_revoked...
        for (int i = 0; i < 5 * BUDGET; i++) {
            try {
                c.openStream(target, revoked, Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS).close();
                throw new AssertionError("a revoked grant opened a stream");
            } catch (ExecutionException e) {
                assertTrue(e.getCause() instanceof TunnelStreamException t && t.error() == TunnelError.GRANT_REVOKED,
                        e.getCause().toString());
            }
        }
        // ...and the token's other sessions are not cooled down for it.
        SecurityOpen.openAndClose(c, target, gw.grant("other-session", echo.port()));
        c.close();
    }

    /** Opens a stream that must be accepted, then closes it. */
    static final class SecurityOpen {
        static void openAndClose(TunnelConnection c, Authority target, String grant) throws Exception {
            Http2StreamChannel s = c.openStream(target, grant, Duration.ofSeconds(5))
                    .get(TokenFloodGateway.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            s.close().syncUninterruptibly();
        }
    }

    /** The gateway's audit lines while open. */
    static final class AuditLines extends AppenderBase<ILoggingEvent> implements AutoCloseable {
        final List<String> lines = new CopyOnWriteArrayList<>();
        private final Logger logger = (Logger) LoggerFactory.getLogger(AuditLog.LOGGER);

        AuditLines() {
            setName("flood-audit-" + System.identityHashCode(this));
            setContext(logger.getLoggerContext());
            start();
            logger.addAppender(this);
        }

        @Override
        protected void append(ILoggingEvent event) {
            lines.add(event.getFormattedMessage());
        }

        List<JsonNode> streamRefusals() {
            List<JsonNode> out = new ArrayList<>();
            for (String line : lines) {
                try {
                    JsonNode n = JSON.readTree(line);
                    if ("stream_refused".equals(n.path("event").asText())) {
                        out.add(n);
                    }
                } catch (IOException e) {
                    // not an audit JSON line
                }
            }
            return out;
        }

        /** Refusals the lines account for: one per full line plus each summary's count. */
        long refusalsCovered() {
            return streamRefusals().stream().mapToLong(n -> n.has("repeated") ? n.get("repeated").asLong() : 1).sum();
        }

        @Override
        public void close() {
            logger.detachAppender(this);
            stop();
        }
    }
}
