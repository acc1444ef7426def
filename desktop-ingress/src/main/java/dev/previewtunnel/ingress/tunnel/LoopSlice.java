package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.mux.TunnelConnection;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The part of a {@link TunnelPool} that lives on one event loop: its own tunnel connections ({@link TunnelSlot}s),
 * all on that loop, so every stream opened here runs on the loop of the browser connection that relays it and no
 * relay ever hands work to another thread (docs/architecture.md "Threads and memory"). While none of its
 * connections is up, opens wait for one (see StreamOpening) and ask for an attempt now instead of at the end of
 * the backoff ({@link #demandConnection}): a stream waits out its own loop's reconnect rather than hopping loops.
 */
final class LoopSlice implements TunnelSlot.Events {
    /**
     * Attempts asked for by waiting opens start at most this often per slice (each waits out no backoff): a restarted
     * gateway is found within this much of coming back, and a dead one sees at most four refused connects a second
     * per loop, and only while a browser request is waiting.
     */
    static final Duration DEMAND_INTERVAL = Duration.ofMillis(250);

    final EventLoop loop;
    private final List<TunnelSlot> slots = new ArrayList<>();
    /**
     * Every connection of this slice whose streams may not all have ended: the slots' current ones and those they
     * dropped or replaced (lost, draining). Pruned once a connection is closed with no live stream, so status
     * counts the streams of a dead or draining connection until they have really ended. Guarded by this.
     */
    private final Set<TunnelConnection> opened = new HashSet<>();
    private volatile boolean closed;
    /** Set by start(): before it no slot will ever attempt a connection, so no open may wait for one. */
    private volatile boolean started;
    /** Settles with the next connection a slot brings up; replaced as each one comes up. Guarded by this. */
    private Promise<TunnelConnection> nextUp;
    /** Settles with the outcome of the next connect attempt of any slot; replaced as each settles. Guarded by this. */
    private Promise<TunnelConnection> nextAttempt;
    /** Whether any connection of this slice ever came up. Guarded by this. */
    private boolean everUp;
    /** Opens waiting for a connection; while there are some, attempts are asked for. Guarded by this. */
    private int waiters;
    /** When the last asked-for attempt started, and whether one is scheduled. Guarded by this. */
    private long lastDemandNanos = System.nanoTime() - DEMAND_INTERVAL.toNanos();
    private boolean demandScheduled;

    /** What status output needs of a slot, a slice or a pool: each adds up the counts of its parts. */
    record Counts(int size, int connected, int connecting, int draining, int liveStreams, Instant downSince,
                  String lastError, long reconnects) {
        static final Counts NONE = new Counts(0, 0, 0, 0, 0, null, null, 0);

        /** The sum; the earlier of the two down times, and {@code other}'s last error if it has one. */
        Counts plus(Counts other) {
            Instant since = downSince == null || (other.downSince != null && other.downSince.isBefore(downSince))
                    ? other.downSince : downSince;
            return new Counts(size + other.size, connected + other.connected, connecting + other.connecting,
                    draining + other.draining, liveStreams + other.liveStreams, since,
                    other.lastError != null ? other.lastError : lastError, reconnects + other.reconnects);
        }

        /** As seen from outside: a down time only while nothing is connected. */
        Counts settled() {
            return connected > 0 && downSince != null ? new Counts(size, connected, connecting, draining,
                    liveStreams, null, lastError, reconnects) : this;
        }
    }

    /** {@code size} connections on {@code loop}, numbered from {@code firstIndex} in the logs. */
    LoopSlice(EventLoop loop, TunnelDial dial, int firstIndex, int size) {
        this.loop = loop;
        this.nextUp = loop.newPromise();
        this.nextAttempt = loop.newPromise();
        for (int i = 0; i < size; i++) {
            slots.add(new TunnelSlot(firstIndex + i, loop, dial, this));
        }
    }

    void start(Promise<Void> firstUp) {
        started = true;
        for (TunnelSlot slot : slots) {
            slot.connect(firstUp);
        }
    }

    boolean started() {
        return started;
    }

    @Override
    public boolean closed() {
        return closed;
    }

    /** The least-loaded usable connection of this slice, or null when none is up. */
    synchronized TunnelConnection leastLoaded() {
        TunnelConnection best = null;
        for (TunnelSlot s : slots) {
            TunnelConnection c = s.usable();
            if (c != null && (best == null || c.liveStreams() < best.liveStreams())) {
                best = c;
            }
        }
        return best;
    }

    /**
     * For an open that found no connection up: what to wait for (the next connection if this slice has been up
     * before: a restart or a network blip, requests ride it out; else only the next attempt: a gateway never
     * reached, likely a wrong address, is reported at once), counted as a waiter; null when no attempt will ever
     * come (not started, or closed).
     */
    synchronized Future<TunnelConnection> await() {
        if (!started || closed) {
            return null;
        }
        waiters++;
        return everUp ? nextUp : nextAttempt;
    }

    synchronized void awaited() {
        waiters--;
    }

    @Override
    public boolean up(TunnelConnection c) {
        Promise<TunnelConnection> settled;
        Promise<TunnelConnection> attemptSettled;
        synchronized (this) {
            attemptSettled = nextAttempt;
            nextAttempt = loop.newPromise();
            // close() sets closed before it takes the monitor to collect the connections it closes.
            if (closed) {
                settled = null;
            } else {
                pruneOpened();
                opened.add(c);
                settled = nextUp;
                nextUp = loop.newPromise();
                everUp = true;
            }
        }
        if (settled == null) {
            attemptSettled.tryFailure(new IllegalStateException("tunnel pool closed"));
            return false;
        }
        settled.trySuccess(c);
        attemptSettled.trySuccess(c);
        return true;
    }

    @Override
    public void attemptFailed(Throwable cause) {
        Promise<TunnelConnection> attemptSettled;
        synchronized (this) {
            attemptSettled = nextAttempt;
            nextAttempt = loop.newPromise();
        }
        attemptSettled.tryFailure(cause);
    }

    @Override
    public void lost() {
        demandConnection();
    }

    /**
     * While opens wait for a connection and no attempt is in flight, starts one now on a slot that is waiting out
     * its backoff, at most once per {@link #DEMAND_INTERVAL}: the backoff spares a gateway that is down when nobody
     * needs it, but must not keep a browser waiting once it is back. A failed attempt asks again (see TunnelSlot).
     */
    void demandConnection() {
        TunnelSlot chosen = null;
        long delay = 0;
        synchronized (this) {
            if (closed || waiters <= 0 || demandScheduled) {
                return;
            }
            for (TunnelSlot s : slots) {
                if (s.busyOrUp()) {
                    return; // an attempt in flight (its outcome asks again) or a connection up already
                }
                if (chosen == null && s.down()) {
                    chosen = s;
                }
            }
            if (chosen == null) {
                return;
            }
            long now = System.nanoTime();
            long wait = lastDemandNanos + DEMAND_INTERVAL.toNanos() - now;
            if (wait > 0) {
                demandScheduled = true;
                delay = wait;
                chosen = null;
            } else {
                lastDemandNanos = now;
            }
        }
        if (chosen != null) {
            chosen.connectNow();
            return;
        }
        loop.schedule(() -> {
            synchronized (this) {
                demandScheduled = false;
            }
            demandConnection();
        }, delay, TimeUnit.NANOSECONDS);
    }

    synchronized Counts counts() {
        Counts sum = Counts.NONE;
        for (TunnelSlot slot : slots) {
            TunnelSlot.State s = slot.state();
            sum = sum.plus(new Counts(1, s.connected() ? 1 : 0, s.connecting() ? 1 : 0, 0, 0, s.downSince(),
                    s.lastError(), s.reconnects()));
        }
        pruneOpened();
        for (TunnelConnection c : opened) {
            int draining = c.channel().isOpen() && c.isDraining() ? 1 : 0;
            sum = sum.plus(new Counts(0, 0, 0, draining, c.liveStreams(), null, null, 0));
        }
        return sum.settled();
    }

    /** Live streams of each usable connection, in slot order. */
    synchronized List<Integer> liveStreamsPerConnection() {
        List<Integer> counts = new ArrayList<>();
        for (TunnelSlot s : slots) {
            TunnelConnection c = s.usable();
            if (c != null) {
                counts.add(c.liveStreams());
            }
        }
        return counts;
    }

    /**
     * Drops the connections that are closed and whose streams have all ended: nothing left to count or drain.
     * Called whenever a connection is added (and by status and the close paths), so the set stays as small as the
     * connections that still matter, however often the slice reconnects. Guarded by this.
     */
    private void pruneOpened() {
        opened.removeIf(c -> !c.channel().isOpen() && c.liveStreams() == 0);
    }

    /** Every connection of the slice that may still carry streams: current, draining or dropped. */
    synchronized List<TunnelConnection> openedConnections() {
        pruneOpened();
        return new ArrayList<>(opened);
    }

    /**
     * Stops reconnecting, abandons the connect attempts in flight (their connections are closed now) and drains
     * every connection, including those the gateway is draining (GOAWAY) that still carry streams: each closes
     * once its streams end, within {@code drain}.
     */
    void close(Duration drain) {
        closed = true;
        List<TunnelConnection> open;
        Promise<TunnelConnection> waiting;
        List<Future<TunnelConnection>> attempts = new ArrayList<>();
        synchronized (this) {
            open = openedConnections();
            waiting = nextUp;
            nextAttempt.tryFailure(new IllegalStateException("tunnel pool closed"));
            for (TunnelSlot s : slots) {
                Future<TunnelConnection> attempt = s.stop();
                if (attempt != null) {
                    attempts.add(attempt);
                }
            }
        }
        // An attempt mid-handshake must end here, while the event loops still run: the owner shuts them down
        // next, and a connection that completes its handshake during that shutdown is closed by nobody (the
        // gateway kept it open). Cancelling closes its channel (TunnelClient#connect).
        attempts.forEach(a -> a.cancel(false));
        open.forEach(c -> c.close(drain));
        // Opens waiting for a slot's next connection must not outlive the pool.
        waiting.tryFailure(new IllegalStateException("tunnel pool closed"));
    }
}
