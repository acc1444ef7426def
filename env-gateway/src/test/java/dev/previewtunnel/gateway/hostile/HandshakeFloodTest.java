package dev.previewtunnel.gateway.hostile;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.GatewayMetrics;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 3 at the handshake: a client floods upgrades carrying a bad-signature connection token. Nothing
 * identifies it before a token verifies (behind ssh -L every peer is 127.0.0.1), so the gateway verifies at most
 * {@code --max-token-failures} failing tokens per second in all, answering the rest 429
 * {@code too_many_failed_handshakes} unverified, while a token that verified before keeps connecting (it is still
 * verified, never refused by the budget). Verifications are counted by
 * {@code ptun_gateway_token_verifications_total{outcome}}.
 */
class HandshakeFloodTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int BUDGET = 20;
    private static final int FLOOD = 1200;

    @TempDir
    Path dir;

    @Test
    void failingTokensAreVerifiedWithinTheBudgetAndAKnownTokenStillConnects() throws Exception {
        try (TokenFloodGateway gw = new TokenFloodGateway(dir, l -> l.withTokenLimits(l.connectionsPerToken(),
                l.grantFailuresPerSecond(), l.grantFailureCoolDown(), BUDGET))) {
            GatewayMetrics metrics = gw.gateway.metrics();
            String honest = gw.newToken();
            assertEquals(101, gw.rawUpgrade(honest).status(), "the honest token verified once before the flood");
            String bad = TokenFloodGateway.badSignature(gw.newToken());

            long failedBefore = metrics.tokenVerifications(false);
            long cpuBefore = TokenFloodGateway.gatewayCpuNanos();
            AtomicLong sent = new AtomicLong();
            AtomicLong refused401 = new AtomicLong();
            AtomicLong refused429 = new AtomicLong();
            AtomicLong otherAnswers = new AtomicLong();
            List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
            long start = System.nanoTime();
            long deadline = start + TimeUnit.SECONDS.toNanos(60);
            List<Thread> flood = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                Thread t = new Thread(() -> {
                    try {
                        while (sent.getAndIncrement() < FLOOD && System.nanoTime() < deadline) {
                            TokenFloodGateway.Answer a = gw.rawUpgrade(bad);
                            if (a.status() == 401 && a.body().contains("token_refused")) {
                                refused401.incrementAndGet();
                            } else if (a.status() == 429 && a.body().contains("too_many_failed_handshakes")) {
                                refused429.incrementAndGet();
                            } else {
                                otherAnswers.incrementAndGet();
                            }
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }, "handshake-flood-" + i);
                flood.add(t);
                t.start();
            }
            List<Long> honestMillis = new ArrayList<>();
            int honestRefused = 0;
            while (flood.stream().anyMatch(Thread::isAlive)) {
                long t0 = System.nanoTime();
                if (gw.rawUpgrade(honest).status() != 101) {
                    honestRefused++;
                }
                honestMillis.add((System.nanoTime() - t0) / 1_000_000);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // paces the honest client
            }
            for (Thread t : flood) {
                t.join(TimeUnit.SECONDS.toMillis(30));
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            long cpuMillis = (TokenFloodGateway.gatewayCpuNanos() - cpuBefore) / 1_000_000;
            long verifiedFailures = metrics.tokenVerifications(false) - failedBefore;
            Collections.sort(honestMillis);
            System.out.println(JSON.createObjectNode()
                    .put("case", "bad-token-flood")
                    .put("upgrades", refused401.get() + refused429.get() + otherAnswers.get())
                    .put("seconds", Math.round(seconds * 100) / 100.0)
                    .put("failedVerifications", verifiedFailures)
                    .put("refused429", refused429.get())
                    .put("gatewayCpuMillis", cpuMillis)
                    .put("gatewayCores", Math.round(cpuMillis / (seconds * 10)) / 100.0)
                    .put("honestUpgrades", honestMillis.size())
                    .put("honestRefused", honestRefused)
                    .put("honestP50Millis", honestMillis.isEmpty() ? -1 : honestMillis.get(honestMillis.size() / 2))
                    .put("honestMaxMillis", honestMillis.isEmpty() ? -1 : honestMillis.get(honestMillis.size() - 1))
                    .toString());

            assertTrue(errors.isEmpty(), () -> "flood failed: " + errors);
            assertEquals(FLOOD, refused401.get() + refused429.get(), "every bad upgrade refused, 401 or 429");
            assertEquals(0, otherAnswers.get());
            long bound = (long) Math.ceil(BUDGET * (seconds + 1));
            assertTrue(verifiedFailures <= bound, verifiedFailures + " failed token verifications in " + seconds
                    + " s: more than the budget of " + BUDGET + "/s (" + bound + ")");
            assertEquals(verifiedFailures, refused401.get(), "each 401 was one verification, each 429 none");
            assertFalse(honestMillis.isEmpty(), "the honest token reconnected during the flood");
            assertEquals(0, honestRefused, "a token that verified before is never refused by the budget");
        }
    }
}
