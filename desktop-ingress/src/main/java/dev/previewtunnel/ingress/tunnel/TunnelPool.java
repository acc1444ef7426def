package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.netty.util.concurrent.Promise;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A small, bounded set of tunnel connections to one gateway. Streams go to the least-loaded usable connection.
 * Each slot keeps itself connected: when its connection drops (or the gateway sends GOAWAY) it reconnects with
 * jittered exponential backoff. While no connection is up, an open asks for an attempt now instead of at the end of
 * the backoff ({@link #demandConnection}) and waits, at most its open timeout: for the next connection to come up if
 * the pool has been up before (a restart or a network blip: requests ride it out), else only for the next attempt
 * (a gateway never reached, likely a wrong address, is reported at once). When none comes up it fails with
 * {@link TunnelError#GATEWAY_UNREACHABLE} ("since ..., retrying").
 */
public final class TunnelPool implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TunnelPool.class);
    static final Duration MIN_BACKOFF = Duration.ofMillis(100);
    static final Duration MAX_BACKOFF = Duration.ofSeconds(15);
    /** How many more live streams the caller's own connection may carry than the least-loaded one, see pick. */
    static final int LOCAL_SLACK = 8;
    /**
     * Attempts asked for by waiting opens start at most this often per pool (each waits out no backoff): a restarted
     * gateway is found within this much of coming back, and a dead one sees at most four refused connects a second
     * per desktop, and only while a browser request is waiting.
     */
    static final Duration DEMAND_INTERVAL = Duration.ofMillis(250);

    private final TunnelClient client;
    private final URI url;
    private final Supplier<String> token;
    private final SslContext ssl;
    private final Duration connectTimeout;
    private final EventLoop scheduler;
    private final List<Slot> slots = new ArrayList<>();
    /**
     * Every connection this pool opened whose streams may not all have ended: the slots' current ones and those
     * they dropped or replaced (lost, draining). Pruned once a connection is closed with no live stream, so
     * {@link #status()} counts the streams of a dead or draining connection until they have really ended.
     */
    private final Set<TunnelConnection> opened = new HashSet<>();
    private volatile boolean closed;
    /** Set by start(): before it no slot will ever attempt a connection, so no open may wait for one. */
    private volatile boolean started;
    private volatile StreamObserver observer;
    /** Settles with the next connection any slot brings up; replaced as each one comes up. Guarded by this. */
    private Promise<TunnelConnection> nextUp;
    /** Settles with the outcome of the next connect attempt of any slot; replaced as each settles. Guarded by this. */
    private Promise<TunnelConnection> nextAttempt;
    /** Whether any connection of this pool ever came up. Guarded by this. */
    private boolean everUp;
    /** Opens waiting for a connection; while there are some, attempts are asked for. Guarded by this. */
    private int waiters;
    /** When the last asked-for attempt started, and whether one is scheduled. Guarded by this. */
    private long lastDemandNanos = System.nanoTime() - DEMAND_INTERVAL.toNanos();
    private boolean demandScheduled;

    /** Told how each {@link #openStream} ended (metrics); runs before the caller's own listeners. */
    @FunctionalInterface
    public interface StreamObserver {
        /**
         * @param result     the settled open: the stream, or the failure (a {@link TunnelStreamException})
         * @param startNanos {@link System#nanoTime()} when the open was asked for
         */
        void settled(Future<Http2StreamChannel> result, long startNanos);
    }

    /** Sets (or clears, with null) the observer of stream opens. */
    public void streamObserver(StreamObserver streamObserver) {
        this.observer = streamObserver;
    }

    public TunnelPool(TunnelClient client, EventLoop scheduler, URI url, Supplier<String> token, SslContext ssl,
                      int size, Duration connectTimeout) {
        if (size < 1 || size > 64) {
            throw new IllegalArgumentException("pool size must be in [1, 64]");
        }
        this.client = client;
        this.scheduler = scheduler;
        this.url = url;
        this.token = token;
        this.ssl = ssl;
        this.connectTimeout = connectTimeout;
        this.nextUp = scheduler.newPromise();
        this.nextAttempt = scheduler.newPromise();
        for (int i = 0; i < size; i++) {
            slots.add(new Slot(i));
        }
    }

    /** Starts connecting every slot; returns a future that completes when the first connection is up or fails. */
    public Future<Void> start() {
        Promise<Void> first = scheduler.newPromise();
        started = true;
        for (Slot slot : slots) {
            slot.connect(first);
        }
        return first;
    }

    /**
     * Opens a stream on the least-loaded usable connection, preferring one that runs on {@code caller}, the event
     * loop of the browser connection that will relay it (see {@link #pick}). The returned future completes on
     * {@code caller}. An open that failed before the gateway acted on it (refused past a GOAWAY, connection
     * draining or lost before the answer) is tried once more, on whatever connection is usable then: during a
     * rolling gateway restart a browser request lands on the fresh connection instead of failing.
     */
    public Future<Http2StreamChannel> openStream(Authority target, String grant, Duration timeout, EventLoop caller) {
        Promise<Http2StreamChannel> result = caller.newPromise();
        StreamObserver o = observer;
        if (o != null) {
            long startNanos = System.nanoTime();
            result.addListener(f -> o.settled(result, startNanos));
        }
        openOnce(target, grant, timeout, caller).addListener(first -> {
            if (first.isSuccess()) {
                result.trySuccess((Http2StreamChannel) first.getNow());
            } else if (first.cause() instanceof TunnelStreamException t && t.retryable() && !closed) {
                openOnce(target, grant, timeout, caller).addListener(second -> {
                    if (second.isSuccess()) {
                        result.trySuccess((Http2StreamChannel) second.getNow());
                    } else {
                        result.tryFailure(second.cause());
                    }
                });
            } else {
                result.tryFailure(first.cause());
            }
        });
        return result;
    }

    private Future<Http2StreamChannel> openOnce(Authority target, String grant, Duration timeout, EventLoop caller) {
        TunnelConnection best = null;
        TunnelConnection local = null;
        Future<TunnelConnection> up;
        synchronized (this) {
            for (Slot s : slots) {
                TunnelConnection c = s.connection;
                if (c != null && c.isUsable()) {
                    best = lessLoaded(best, c);
                    if (c.eventLoop() == caller) {
                        local = lessLoaded(local, c);
                    }
                }
            }
            up = everUp ? nextUp : nextAttempt;
            if (best == null && started && !closed) {
                waiters++;
            }
        }
        if (best != null) {
            return pick(local, best).openStream(target, grant, timeout);
        }
        Promise<Http2StreamChannel> result = caller.newPromise();
        if (!started || closed) {
            result.setFailure(unreachable());
            return result;
        }
        // No connection up: ask for an attempt now rather than at the end of the backoff, and wait for the next
        // connection (or, never up yet, the next attempt's outcome). The open timeout bounds the wait, so a gateway
        // that stays down, or an attempt that never settles, answers the browser in time.
        Future<?> guard = caller.schedule(() -> result.tryFailure(unreachable()), timeout.toNanos(),
                TimeUnit.NANOSECONDS);
        GenericFutureListener<Future<TunnelConnection>> whenUp = f -> {
            if (result.isDone()) {
                return; // answered already (timed out): no stream for it
            }
            if (f.isSuccess()) {
                ((TunnelConnection) f.getNow()).openStream(target, grant, timeout).addListener(s -> {
                    if (s.isSuccess()) {
                        Http2StreamChannel stream = (Http2StreamChannel) s.getNow();
                        if (!result.trySuccess(stream)) {
                            stream.close(); // the open timed out meanwhile: nobody will relay this stream
                        }
                    } else {
                        result.tryFailure(s.cause());
                    }
                });
            } else {
                result.tryFailure(unreachable());
            }
        };
        // An open answered (timed out) leaves the connection's promise: over a long outage one listener per
        // request would pile up on it, and the connection that ends the outage would open a stream for each.
        result.addListener(f -> {
            guard.cancel(false);
            up.removeListener(whenUp);
            synchronized (this) {
                waiters--;
            }
        });
        up.addListener(whenUp);
        demandConnection();
        return result;
    }

    /**
     * While opens wait for a connection and no attempt is in flight, starts one now on a slot that is waiting out
     * its backoff, at most once per {@link #DEMAND_INTERVAL}: the backoff spares a gateway that is down when nobody
     * needs it, but must not keep a browser waiting once it is back. A failed attempt asks again (see Slot).
     */
    private void demandConnection() {
        Slot chosen = null;
        long delay = 0;
        synchronized (this) {
            if (closed || waiters <= 0 || demandScheduled) {
                return;
            }
            for (Slot s : slots) {
                if (s.attempting || (s.connection != null && s.connection.isUsable())) {
                    return; // an attempt in flight (its outcome asks again) or a connection up already
                }
                if (chosen == null && s.connection == null) {
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
        scheduler.schedule(() -> {
            synchronized (this) {
                demandScheduled = false;
            }
            demandConnection();
        }, delay, TimeUnit.NANOSECONDS);
    }

    private static TunnelConnection lessLoaded(TunnelConnection current, TunnelConnection candidate) {
        return current == null || candidate.liveStreams() < current.liveStreams() ? candidate : current;
    }

    /**
     * The connection on the caller's own event loop when it is not much busier than the least-loaded one. A
     * stream on another loop pays a task hand-off and a thread wake-up for every relayed read, both ways, and for
     * the open itself; on a small machine those wake-ups, not the bytes, are most of a stream open's latency.
     * The slack keeps the spread even: browser connections are spread over the loops round-robin, so the
     * connections of each loop see about the same share.
     */
    static TunnelConnection pick(TunnelConnection local, TunnelConnection best) {
        return local != null && local.liveStreams() <= best.liveStreams() + LOCAL_SLACK ? local : best;
    }

    private TunnelStreamException unreachable() {
        Status s = status();
        StringBuilder why = new StringBuilder("environment gateway unreachable");
        if (s.downSince() != null) {
            why.append(" since ").append(s.downSince());
        }
        if (s.lastError() != null) {
            why.append(" (").append(s.lastError()).append(")");
        }
        why.append(closed ? "; ingress is stopping" : ", retrying");
        return new TunnelStreamException(TunnelError.GATEWAY_UNREACHABLE, why.toString());
    }

    /**
     * A snapshot for status output, metrics and error pages.
     *
     * @param size        slots (the configured pool size)
     * @param connected   connections up and taking new streams
     * @param connecting  slots with a connect attempt in flight
     * @param draining    connections the gateway drained (GOAWAY) that are still open, finishing their streams
     * @param liveStreams streams open now on any connection of this pool, connected, draining or dropped
     * @param downSince   while no connection is up: since when (the earliest slot that went down), else null
     * @param lastError   the last connect failure or reason a connection went away, or null if none yet
     * @param reconnects  connections lost or drained and replaced
     */
    public record Status(int size, int connected, int connecting, int draining, int liveStreams, Instant downSince,
                         String lastError, long reconnects) {
        public String state() {
            return connected > 0 ? "connected" : "reconnecting";
        }

        /** Slots neither connected nor connecting: waiting out their reconnect backoff. */
        public int waiting() {
            return Math.max(0, size - connected - connecting);
        }
    }

    public synchronized Status status() {
        int connected = 0;
        int connecting = 0;
        Instant downSince = null;
        String lastError = null;
        long reconnects = 0;
        for (Slot s : slots) {
            if (s.connection != null && s.connection.isUsable()) {
                connected++;
            } else {
                if (s.connecting != null) {
                    connecting++;
                }
                if (s.downSince != null && (downSince == null || s.downSince.isBefore(downSince))) {
                    downSince = s.downSince;
                }
            }
            if (s.lastError != null) {
                lastError = s.lastError;
            }
            reconnects += s.reconnects;
        }
        int draining = 0;
        int live = 0;
        pruneOpened();
        for (TunnelConnection c : opened) {
            live += c.liveStreams();
            if (c.channel().isOpen() && c.isDraining()) {
                draining++;
            }
        }
        return new Status(slots.size(), connected, connecting, draining, live, connected > 0 ? null : downSince,
                lastError, reconnects);
    }

    /**
     * Drops the connections that are closed and whose streams have all ended: nothing left to count or drain.
     * Called whenever a connection is added (and by status and the close paths), so the set stays as small as the
     * connections that still matter, however often the pool reconnects.
     */
    private synchronized void pruneOpened() {
        opened.removeIf(c -> !c.channel().isOpen() && c.liveStreams() == 0);
    }

    /**
     * Every connection of the pool that may still carry streams: current, draining or dropped (a slot's current
     * connection is always among them: it is added to {@link #opened} when the slot takes it).
     */
    private synchronized List<TunnelConnection> openedConnections() {
        pruneOpened();
        return new ArrayList<>(opened);
    }

    /** Live streams of each usable connection, in slot order: shows how streams were spread over the pool. */
    public synchronized List<Integer> liveStreamsPerConnection() {
        List<Integer> counts = new ArrayList<>();
        for (Slot s : slots) {
            if (s.connection != null && s.connection.isUsable()) {
                counts.add(s.connection.liveStreams());
            }
        }
        return counts;
    }

    @Override
    public void close() {
        close(Duration.ZERO);
    }

    /**
     * Stops reconnecting, abandons the connect attempts in flight (their connections are closed now) and drains
     * every connection, including those the gateway is draining (GOAWAY) that still carry streams: each closes
     * once its streams end, within {@code drain}.
     */
    public void close(Duration drain) {
        closed = true;
        List<TunnelConnection> open;
        Promise<TunnelConnection> waiting;
        List<Future<TunnelConnection>> attempts = new ArrayList<>();
        synchronized (this) {
            open = openedConnections();
            waiting = nextUp;
            nextAttempt.tryFailure(new IllegalStateException("tunnel pool closed"));
            for (Slot s : slots) {
                if (s.retry != null) {
                    s.retry.cancel(false);
                }
                if (s.connecting != null) {
                    attempts.add(s.connecting);
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

    /**
     * After {@link #close(Duration)} and its drain: closes at once every connection still open (a drain that timed
     * out), without waiting; {@link #awaitClosed} waits for them. For the owner to call before it shuts the event
     * loops down, which in Netty 4.2 does not reliably close the channels still registered.
     */
    public void closeConnectionsNow() {
        openedConnections().forEach(c -> c.channel().close());
    }

    /**
     * After {@link #close()}: waits until every tunnel connection (draining ones too) has closed (each closes once
     * its live streams have ended, after GOAWAY) or {@code timeout} has passed. Returns true if all closed in time.
     */
    public boolean awaitClosed(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (TunnelConnection c : openedConnections()) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || !c.channel().closeFuture().awaitUninterruptibly(left, TimeUnit.NANOSECONDS)) {
                return false;
            }
        }
        return true;
    }

    /** One pooled connection and its reconnect state. Guarded by the pool's monitor. */
    private final class Slot {
        final int index;
        TunnelConnection connection;
        Future<TunnelConnection> connecting;
        /** From the start of connect() until its attempt settles: one attempt at a time per slot. */
        boolean attempting;
        /** The backoff timer of the next attempt, if one is pending. */
        Future<?> retry;
        Instant downSince = Instant.now();
        String lastError;
        final ReconnectBackoff backoff = new ReconnectBackoff(MIN_BACKOFF, MAX_BACKOFF,
                n -> ThreadLocalRandom.current().nextLong(n));
        long reconnects;

        Slot(int index) {
            this.index = index;
        }

        /** An attempt now, instead of when the backoff timer fires (see demandConnection). */
        void connectNow() {
            synchronized (TunnelPool.this) {
                if (retry != null) {
                    retry.cancel(false);
                    retry = null;
                }
            }
            connect(null);
        }

        void connect(Promise<Void> firstUp) {
            synchronized (TunnelPool.this) {
                if (closed || attempting || connection != null) {
                    return; // one attempt at a time; a slot that is up needs none
                }
                attempting = true;
            }
            // Slot i always lives on loop i (modulo their number), so the pool's connections are spread evenly
            // over the loops, as the browser connections are, whatever order reconnects happen in (see pick).
            Future<TunnelConnection> attempt = client.connect(url, token.get(), ssl, connectTimeout,
                    client.loop(index));
            synchronized (TunnelPool.this) {
                connecting = attempt;
            }
            if (closed) {
                // close() collected the attempts just before this one was recorded: abandon it here.
                attempt.cancel(false);
            }
            attempt.addListener(f -> {
                Promise<TunnelConnection> settled = null;
                Promise<TunnelConnection> attemptSettled;
                synchronized (TunnelPool.this) {
                    attemptSettled = nextAttempt;
                    nextAttempt = scheduler.newPromise();
                }
                if (f.isSuccess()) {
                    TunnelConnection c = (TunnelConnection) f.getNow();
                    boolean afterClose;
                    synchronized (TunnelPool.this) {
                        connecting = null;
                        attempting = false;
                        // close() sets closed before it takes the monitor to collect the connections it closes.
                        afterClose = closed;
                        if (!afterClose) {
                            connection = c;
                            pruneOpened();
                            opened.add(c);
                            downSince = null;
                            backoff.reset();
                            settled = nextUp;
                            nextUp = scheduler.newPromise();
                            everUp = true;
                        }
                    }
                    if (afterClose) {
                        // Came up after close(): nobody else would ever close it.
                        c.close();
                        attemptSettled.tryFailure(new IllegalStateException("tunnel pool closed"));
                        return;
                    }
                    settled.trySuccess(c);
                    attemptSettled.trySuccess(c);
                    if (firstUp != null) {
                        firstUp.trySuccess(null);
                    }
                    log.info("tunnel connection {} up to {}", index, url.getHost() + ":" + url.getPort());
                    c.channel().closeFuture().addListener(x -> onDown(c, "connection closed"));
                    watchDrain(c);
                } else {
                    String error = f.cause().getMessage();
                    synchronized (TunnelPool.this) {
                        connecting = null;
                        attempting = false;
                        lastError = error;
                        if (downSince == null) {
                            downSince = Instant.now();
                        }
                    }
                    attemptSettled.tryFailure(f.cause());
                    if (firstUp != null) {
                        firstUp.tryFailure(f.cause());
                    }
                    scheduleReconnect();
                    demandConnection(); // opens still waiting get another attempt, at the demand rate
                }
            });
        }

        /** A draining (GOAWAY) connection takes no new streams: open a replacement next to it at once. */
        private void watchDrain(TunnelConnection c) {
            c.onDrain(() -> {
                synchronized (TunnelPool.this) {
                    if (connection != c) {
                        return;
                    }
                    connection = null;
                    downSince = Instant.now();
                    lastError = "gateway is draining (GOAWAY)";
                    reconnects++;
                }
                connect(null);
            });
        }

        private void onDown(TunnelConnection c, String why) {
            synchronized (TunnelPool.this) {
                if (connection != c) {
                    return; // already replaced (drain)
                }
                connection = null;
                downSince = Instant.now();
                lastError = why;
                reconnects++;
            }
            if (!closed) {
                log.warn("tunnel connection {} lost: {}; reconnecting", index, why);
                scheduleReconnect();
                demandConnection(); // opens already waiting (a retried open) need not wait out the backoff
            }
        }

        private void scheduleReconnect() {
            if (closed) {
                return;
            }
            synchronized (TunnelPool.this) {
                long delay = backoff.nextDelayMillis();
                retry = scheduler.schedule(() -> connect(null), delay, TimeUnit.MILLISECONDS);
            }
        }
    }
}
