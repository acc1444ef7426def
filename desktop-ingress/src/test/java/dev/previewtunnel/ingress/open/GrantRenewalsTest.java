package dev.previewtunnel.ingress.open;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.ssh.IssuedGrant;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Renewal timing, replacement in the session and failure words, on a hand-driven timer and a fixed clock. */
class GrantRenewalsTest {
    private static final Instant NOW = Instant.parse("2026-12-02T06:00:00Z");
    @TempDir
    static Path keys;
    static GrantIssuer issuer;
    static KeyDirectory keyDirectory;

    @BeforeAll
    static void keys() throws Exception {
        keyDirectory = KeyDirectory.init(keys.resolve("k"));
        issuer = new GrantIssuer(keyDirectory.signingKey(), Clock.fixed(NOW, ZoneOffset.UTC));
    }


    /** The tasks scheduled and their delays; {@link #runNext} runs the oldest not cancelled. */
    private static final class ManualTimer implements GrantRenewals.Timer {
        final List<Duration> delays = new ArrayList<>();
        final List<Runnable> tasks = new ArrayList<>();
        final List<Boolean> cancelled = new ArrayList<>();

        @Override
        public Runnable schedule(Runnable task, Duration delay) {
            int i = tasks.size();
            delays.add(delay);
            tasks.add(task);
            cancelled.add(false);
            return () -> cancelled.set(i, true);
        }

        void runNext() {
            for (int i = 0; i < tasks.size(); i++) {
                if (!cancelled.get(i)) {
                    cancelled.set(i, true);
                    tasks.get(i).run();
                    return;
                }
            }
            throw new AssertionError("nothing scheduled");
        }

        long pending() {
            return cancelled.stream().filter(c -> !c).count();
        }

        Duration lastDelay() {
            return delays.get(delays.size() - 1);
        }
    }

    /** Answers each mint from a queue of outcomes: a grant of {@code ttl}, or a failure. */
    private static final class ScriptedMinter implements GrantRenewals.Minter {
        final List<String> script = new ArrayList<>();
        final List<String> minted = new ArrayList<>();

        @Override
        public CompletableFuture<IssuedGrant> mint(String session, String target, Duration ttl) {
            String next = script.isEmpty() ? "ok" : script.remove(0);
            if (!next.equals("ok")) {
                return CompletableFuture.failedFuture(new IllegalStateException(next));
            }
            String[] hostPort = target.split(":");
            String jwt = issuer.issueGrant(GrantSpec.tcp("ssh-h", session, hostPort[0],
                    Integer.parseInt(hostPort[1])), ttl);
            UnverifiedGrantView view = UnverifiedGrantView.decode(jwt);
            minted.add(view.jti());
            return CompletableFuture.completedFuture(new IssuedGrant(jwt, view.jti(), view.expiresAt()));
        }
    }

    private final BrowserSession session = BrowserSession.create("s");
    private final ManualTimer timer = new ManualTimer();
    private final ScriptedMinter minter = new ScriptedMinter();
    private final GrantRenewals renewals = new GrantRenewals(session, minter, Duration.ofSeconds(20), timer);

    @Test
    void aKeptTargetIsAttachedAndRenewedAtHalfItsLifeReplacingTheOldGrant() {
        IssuedGrant first = renewals.keep("localhost:5173").join();
        assertEquals(List.of(first.grantId()), grantIds(), "attached to the session");
        assertEquals(Duration.ofSeconds(10), timer.lastDelay(), "renewal after half of the 20 s lifetime");

        timer.runNext();
        assertEquals(2, minter.minted.size());
        assertEquals(List.of(minter.minted.get(1)), grantIds(), "the newer grant replaced the older one");
        assertEquals(1, renewals.renewals("localhost:5173"));
        assertNull(renewals.problem("localhost:5173"));
        assertEquals(1, timer.pending(), "the next renewal is scheduled");
    }

    @Test
    void aFailedRenewalIsRetriedWithBackoffAndSaidInWordsUntilOneSucceeds() {
        renewals.keep("localhost:5173").join();
        String attached = grantIds().get(0);
        minter.script.addAll(List.of("the SSH link to h is down", "the SSH link to h is down"));

        timer.runNext();
        assertEquals("the grant for localhost:5173 could not be renewed: the SSH link to h is down",
                renewals.problem("localhost:5173"));
        assertEquals(Duration.ofSeconds(2), timer.lastDelay());
        assertEquals(List.of(attached), grantIds(), "the current grant stays while renewals fail");
        timer.runNext();
        assertEquals(Duration.ofSeconds(4), timer.lastDelay(), "doubling");

        timer.runNext();
        assertNull(renewals.problem("localhost:5173"), "cleared by the success");
        assertEquals(1, renewals.renewals("localhost:5173"));
        assertEquals(Duration.ofSeconds(10), timer.lastDelay(), "back to half the life");
    }

    /**
     * The grants carry the remote's clock: minted an hour "in the past" as this machine sees it (the remote's clock
     * an hour behind), the renewal still comes after half the lifetime, not at once and then every second.
     */
    @Test
    void renewalTimingIgnoresTheRemotesClock() {
        GrantIssuer behind = new GrantIssuer(keyDirectory.signingKey(), Clock.fixed(NOW.minusSeconds(3600), ZoneOffset.UTC));
        GrantRenewals skewed = new GrantRenewals(session, (s, target, ttl) -> {
            String jwt = behind.issueGrant(GrantSpec.tcp("ssh-h", s, "localhost", 5173), ttl);
            UnverifiedGrantView view = UnverifiedGrantView.decode(jwt);
            return CompletableFuture.completedFuture(new IssuedGrant(jwt, view.jti(), view.expiresAt()));
        }, Duration.ofSeconds(20), timer);
        skewed.keep("localhost:5173").join();
        assertEquals(Duration.ofSeconds(10), timer.lastDelay());
    }

    @Test
    void renewNowMintsForAKeptTargetOnlyAndCloseStopsTheTimers() {
        renewals.keep("localhost:5173").join();
        String jwt = renewals.renewNow("localhost:5173").join();
        assertEquals(UnverifiedGrantView.decode(jwt).jti(), grantIds().get(0));
        CompletionException e = assertThrows(CompletionException.class,
                () -> renewals.renewNow("localhost:9999").join());
        assertTrue(e.getCause().getMessage().contains("not a target opened"), e.getMessage());

        renewals.close();
        assertEquals(0, timer.pending(), "no renewal after close");
    }

    private List<String> grantIds() {
        return session.authorities().entries().stream().map(e -> e.grantId()).toList();
    }
}
