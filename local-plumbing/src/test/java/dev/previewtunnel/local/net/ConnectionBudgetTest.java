package dev.previewtunnel.local.net;

import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The bookkeeping of {@link ConnectionBudget}, on embedded channels (the listeners' tests use real sockets). */
class ConnectionBudgetTest {

    @Test
    void overTheUntrustedCapTheOldestUntrustedIsClosedAndTrustedOnesAreKept() {
        ConnectionBudget budget = new ConnectionBudget("test", 10, 3, null);
        EmbeddedChannel trusted = new EmbeddedChannel();
        assertTrue(budget.admit(trusted));
        ConnectionBudget.trust(trusted);
        List<EmbeddedChannel> untrusted = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            EmbeddedChannel ch = new EmbeddedChannel();
            assertTrue(budget.admit(ch), "admitted: the oldest untrusted one makes room");
            untrusted.add(ch);
            untrusted.forEach(EmbeddedChannel::runPendingTasks);
        }
        assertFalse(untrusted.get(0).isOpen(), "oldest closed");
        assertFalse(untrusted.get(1).isOpen(), "second oldest closed");
        assertTrue(untrusted.get(2).isOpen() && untrusted.get(3).isOpen() && untrusted.get(4).isOpen());
        assertTrue(trusted.isOpen(), "a trusted connection is never evicted");
        assertEquals(3, budget.pending());
        assertEquals(4, budget.open());
        assertEquals(2, budget.evicted());
        ConnectionBudget.trust(untrusted.get(2));
        ConnectionBudget.trust(untrusted.get(2)); // idempotent
        assertEquals(2, budget.pending());
        untrusted.get(3).close();
        assertEquals(1, budget.pending());
        assertEquals(3, budget.open());
    }

    @Test
    void theOldestIsTheFirstAcceptedWhicheverLoopAdmitsItFirst() {
        // Admission runs on each child's own loop, so a connection accepted last can be admitted before stragglers
        // accepted earlier on a busier loop; those stragglers must not evict it (a CI failure of
        // BrowserConnectionBudgetTest: a honest request accepted after 1,000 idle sockets was reset).
        ConnectionBudget budget = new ConnectionBudget("test", 10, 2, null);
        EmbeddedChannel listener = new EmbeddedChannel(budget.acceptOrder());
        EmbeddedChannel first = new EmbeddedChannel();
        EmbeddedChannel second = new EmbeddedChannel();
        EmbeddedChannel honest = new EmbeddedChannel();
        for (EmbeddedChannel accepted : List.of(first, second, honest)) {
            listener.writeInbound(accepted);
            assertSame(accepted, listener.readInbound(), "passed on to the acceptor");
        }
        assertTrue(budget.admit(honest)); // its loop was idle
        assertTrue(budget.admit(first));  // the stragglers' loop catches up
        assertTrue(budget.admit(second)); // over the cap of 2: the first accepted goes
        List.of(first, second, honest).forEach(EmbeddedChannel::runPendingTasks);
        assertFalse(first.isOpen(), "the first accepted is the oldest");
        assertTrue(second.isOpen());
        assertTrue(honest.isOpen(), "the last accepted is kept although it was admitted first");
        assertEquals(1, budget.evicted());
        assertEquals(2, budget.pending());
        listener.finishAndReleaseAll();
    }

    @Test
    void aConnectionTrustedBeforeItsEvictionRunsIsKept() {
        // The eviction is chosen on the admitting loop and runs on the victim's: a request read in between wins.
        ConnectionBudget budget = new ConnectionBudget("test", 10, 1, null);
        EmbeddedChannel reading = new EmbeddedChannel();
        EmbeddedChannel next = new EmbeddedChannel();
        assertTrue(budget.admit(reading));
        assertTrue(budget.admit(next)); // over the cap of 1: reading is chosen, its close queued on its loop
        ConnectionBudget.trust(reading); // its loop reads its credential first
        reading.runPendingTasks();
        assertTrue(reading.isOpen(), "trusted in time: kept");
        assertEquals(0, budget.evicted());
        assertEquals(1, budget.pending(), "only next is untrusted");
        assertEquals(2, budget.open());
    }

    @Test
    void idleKeepAliveConnectionsBecomeEvictableSoTheyCannotFillTheTotal() {
        // A client that completes a request and leaves its connection idle (a pooled HTTP client per call) must not
        // hold a place forever: untrust puts it back in the eviction order, so the total is never reached by idlers.
        ConnectionBudget budget = new ConnectionBudget("test", 4, 3, null);
        List<EmbeddedChannel> idlers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            EmbeddedChannel ch = new EmbeddedChannel();
            assertTrue(budget.admit(ch), "connection " + i + " admitted");
            ConnectionBudget.trust(ch);   // its request arrived
            ConnectionBudget.untrust(ch); // answered; now waiting idle for the next one
            ConnectionBudget.untrust(ch); // idempotent
            idlers.add(ch);
            idlers.forEach(EmbeddedChannel::runPendingTasks);
        }
        assertEquals(0, budget.refused(), "no caller locked out");
        // At most the untrusted cap stays open (an eviction's close runs a moment later, so one more may go).
        assertTrue(budget.open() <= 3 && budget.open() >= 2, "idle ones beyond the cap closed: " + budget.open());
        assertTrue(idlers.get(7).isOpen(), "the newest is kept");
        assertFalse(idlers.get(0).isOpen(), "the oldest idler was closed");
    }

    @Test
    void overTheTotalTheNewConnectionIsClosedAtOnce() {
        ConnectionBudget budget = ConnectionBudget.total("test", 2);
        EmbeddedChannel a = new EmbeddedChannel();
        EmbeddedChannel b = new EmbeddedChannel();
        EmbeddedChannel c = new EmbeddedChannel();
        assertTrue(budget.admit(a));
        assertTrue(budget.admit(b));
        assertFalse(budget.admit(c));
        assertFalse(c.isOpen());
        assertEquals(1, budget.refused());
        a.close();
        EmbeddedChannel d = new EmbeddedChannel();
        assertTrue(budget.admit(d), "a closed connection gives its place back");
        assertEquals(2, budget.open());
    }

    @Test
    void anUntrustedConnectionIsClosedAtThePendingTimeoutATrustedOneIsNot() {
        ConnectionBudget budget = new ConnectionBudget("test", 10, 10, Duration.ofSeconds(3));
        EmbeddedChannel idle = new EmbeddedChannel();
        EmbeddedChannel proven = new EmbeddedChannel();
        budget.admit(idle);
        budget.admit(proven);
        ConnectionBudget.trust(proven);
        idle.advanceTimeBy(3, TimeUnit.SECONDS);
        proven.advanceTimeBy(3, TimeUnit.SECONDS);
        idle.runScheduledPendingTasks();
        proven.runScheduledPendingTasks();
        assertFalse(idle.isOpen());
        assertTrue(proven.isOpen());
        assertEquals(0, budget.pending());
    }

    @Test
    void thePendingDeadlineLeavesTheLoopWhenTheConnectionIsTrustedOrCloses() {
        // Left scheduled, each deadline kept its closed channel reachable for the whole timeout.
        ConnectionBudget budget = new ConnectionBudget("test", 10, 10, Duration.ofSeconds(3));
        EmbeddedChannel proven = new EmbeddedChannel();
        EmbeddedChannel gone = new EmbeddedChannel();
        EmbeddedChannel waiting = new EmbeddedChannel();
        List.of(proven, gone, waiting).forEach(EmbeddedChannel::freezeTime); // only the test moves their clocks
        budget.admit(proven);
        budget.admit(gone);
        budget.admit(waiting);
        ConnectionBudget.trust(proven);
        gone.close();
        assertEquals(-1, proven.runScheduledPendingTasks(), "a trusted connection's deadline is still scheduled");
        assertEquals(-1, gone.runScheduledPendingTasks(), "a closed connection's deadline is still scheduled");
        assertTrue(waiting.runScheduledPendingTasks() > 0, "an untrusted connection lost its deadline");
        assertEquals(1, budget.pending());
    }

    @Test
    void aChannelAlreadyClosedAtAdmissionLeavesNoDeadlineBehind() {
        // Its close listener runs at once: the deadline must be armed before it, or nothing cancels it.
        ConnectionBudget budget = new ConnectionBudget("test", 10, 10, Duration.ofSeconds(3));
        EmbeddedChannel closed = new EmbeddedChannel();
        closed.close();
        budget.admit(closed);
        closed.runPendingTasks();
        assertEquals(-1, closed.runScheduledPendingTasks(), "a closed channel's deadline is still scheduled");
        assertEquals(0, budget.pending());
        assertEquals(0, budget.open());
    }

    @Test
    void aConnectionMadeUntrustedAgainHasNoDeadline() {
        // The deadline counts from accept; a keep-alive connection made untrusted again is evictable, not timed.
        ConnectionBudget budget = new ConnectionBudget("test", 10, 10, Duration.ofSeconds(3));
        EmbeddedChannel kept = new EmbeddedChannel();
        budget.admit(kept);
        ConnectionBudget.trust(kept);
        ConnectionBudget.untrust(kept);
        kept.advanceTimeBy(3, TimeUnit.SECONDS);
        kept.runScheduledPendingTasks();
        assertTrue(kept.isOpen());
        assertEquals(1, budget.pending());
    }

    @Test
    void capsAreClippedToTheDescriptorLimitMinusAReserve() {
        assertEquals(100, ConnectionBudget.clipToFdLimit("x", 100, 1024));
        assertEquals(1024 - ConnectionBudget.FD_RESERVE, ConnectionBudget.clipToFdLimit("x", 4096, 1024));
        assertEquals(1, ConnectionBudget.clipToFdLimit("x", 4096, 10));
        assertEquals(4096, ConnectionBudget.clipToFdLimit("x", 4096, -1), "unknown limit: unchanged");
        assertTrue(ConnectionBudget.fdLimit() > 0, "the JVM reports ulimit -n on this platform");
    }
}
