package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.mux.TunnelConnection;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One tunnel connection of a {@link LoopSlice} and the loop that keeps it connected, always on the slice's event
 * loop: when the connection drops (or the gateway sends GOAWAY) it reconnects with jittered exponential backoff,
 * one attempt at a time. Its state is guarded by its own monitor; it never calls its {@link Events} while holding
 * it, so a slice may read a slot's state under the slice's monitor (lock order: slice, then slot).
 */
final class TunnelSlot {
    private static final Logger log = LoggerFactory.getLogger(TunnelSlot.class);
    static final Duration MIN_BACKOFF = Duration.ofMillis(100);
    static final Duration MAX_BACKOFF = Duration.ofSeconds(15);

    /** What the slot tells its slice. */
    interface Events {
        /** The slice is closed: no attempt may start, and a connection that comes up is closed at once. */
        boolean closed();

        /** A connection came up; false when the slice closed meanwhile (the slot then closes it, nobody else would). */
        boolean up(TunnelConnection connection);

        /** An attempt failed; opens waiting for it hear so, and the slice may ask for another one. */
        void attemptFailed(Throwable cause);

        /** The connection went away (closed or draining): opens that wait may ask for an attempt now. */
        void lost();
    }

    /** What status output needs of a slot, read under its monitor. */
    record State(boolean connected, boolean connecting, Instant downSince, String lastError, long reconnects) {
    }

    private final int index;
    private final EventLoop loop;
    private final TunnelDial dial;
    private final Events events;
    private final ReconnectBackoff backoff = new ReconnectBackoff(MIN_BACKOFF, MAX_BACKOFF,
            n -> ThreadLocalRandom.current().nextLong(n));
    private TunnelConnection connection;
    private Future<TunnelConnection> connecting;
    /** From the start of connect() until its attempt settles: one attempt at a time. */
    private boolean attempting;
    /** The backoff timer of the next attempt, if one is pending. */
    private Future<?> retry;
    private Instant downSince = Instant.now();
    private String lastError;
    private long reconnects;

    TunnelSlot(int index, EventLoop loop, TunnelDial dial, Events events) {
        this.index = index;
        this.loop = loop;
        this.dial = dial;
        this.events = events;
    }

    /** The connection if it is up and takes new streams, else null. */
    synchronized TunnelConnection usable() {
        return connection != null && connection.isUsable() ? connection : null;
    }

    /** An attempt is in flight or the connection is up: asking this slot for an attempt now would add nothing. */
    synchronized boolean busyOrUp() {
        return attempting || (connection != null && connection.isUsable());
    }

    /** No connection at all: the slot waits out its backoff (or is about to), so an attempt now may start here. */
    synchronized boolean down() {
        return connection == null;
    }

    synchronized State state() {
        boolean connected = connection != null && connection.isUsable();
        return new State(connected, !connected && connecting != null, connected ? null : downSince, lastError,
                reconnects);
    }

    /** Stops the backoff timer and returns the attempt in flight, if any, for the closing slice to cancel. */
    synchronized Future<TunnelConnection> stop() {
        if (retry != null) {
            retry.cancel(false);
        }
        return connecting;
    }

    /** An attempt now, instead of when the backoff timer fires (see LoopSlice#demandConnection). */
    void connectNow() {
        synchronized (this) {
            if (retry != null) {
                retry.cancel(false);
                retry = null;
            }
        }
        connect(null);
    }

    void connect(Promise<Void> firstUp) {
        synchronized (this) {
            if (events.closed() || attempting || connection != null) {
                return; // one attempt at a time; a slot that is up needs none
            }
            attempting = true;
        }
        Future<TunnelConnection> attempt = dial.connect(loop);
        synchronized (this) {
            connecting = attempt;
        }
        if (events.closed()) {
            // The slice's close collected the attempts just before this one was recorded: abandon it here.
            attempt.cancel(false);
        }
        attempt.addListener(f -> {
            if (f.isSuccess()) {
                up((TunnelConnection) f.getNow(), firstUp);
            } else {
                failed(f.cause(), firstUp);
            }
        });
    }

    private void up(TunnelConnection c, Promise<Void> firstUp) {
        synchronized (this) {
            connecting = null;
            attempting = false;
            connection = c;
            downSince = null;
            backoff.reset();
        }
        if (!events.up(c)) {
            synchronized (this) {
                connection = null;
            }
            c.close(); // came up after the slice closed: nobody else would ever close it
            return;
        }
        if (firstUp != null) {
            firstUp.trySuccess(null);
        }
        log.info("tunnel connection {} up to {}", index, dial.shown());
        c.channel().closeFuture().addListener(x -> onDown(c, "connection closed"));
        // A draining (GOAWAY) connection takes no new streams: open a replacement next to it at once.
        c.onDrain(() -> {
            if (replaced(c, "gateway is draining (GOAWAY)")) {
                connect(null);
            }
        });
    }

    private void failed(Throwable cause, Promise<Void> firstUp) {
        synchronized (this) {
            connecting = null;
            attempting = false;
            lastError = cause.getMessage();
            if (downSince == null) {
                downSince = Instant.now();
            }
        }
        events.attemptFailed(cause);
        if (firstUp != null) {
            firstUp.tryFailure(cause);
        }
        scheduleReconnect();
        events.lost(); // opens still waiting get another attempt, at the demand rate
    }

    /** Forgets {@code c} if it is still this slot's connection; false when it was replaced already (drain). */
    private synchronized boolean replaced(TunnelConnection c, String why) {
        if (connection != c) {
            return false;
        }
        connection = null;
        downSince = Instant.now();
        lastError = why;
        reconnects++;
        return true;
    }

    private void onDown(TunnelConnection c, String why) {
        if (replaced(c, why) && !events.closed()) {
            log.warn("tunnel connection {} lost: {}; reconnecting", index, why);
            scheduleReconnect();
            events.lost(); // opens already waiting (a retried open) need not wait out the backoff
        }
    }

    private void scheduleReconnect() {
        if (events.closed()) {
            return;
        }
        synchronized (this) {
            long delay = backoff.nextDelayMillis();
            retry = loop.schedule(() -> connect(null), delay, TimeUnit.MILLISECONDS);
        }
    }
}
