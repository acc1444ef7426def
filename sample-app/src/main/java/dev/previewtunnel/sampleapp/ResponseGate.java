package dev.previewtunnel.sampleapp;

import io.netty.channel.ChannelHandlerContext;
import io.netty.util.concurrent.ScheduledFuture;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Holds the responses of {@code GET /gated-bytes?gate=NAME} requests until a test opens the gate, so that a test
 * can prove that many requests are in flight at the same time (each one holds its own connection, stream and
 * target socket while it waits). Never blocks an event loop: a held request is a parked callback run on its own
 * channel's loop when the gate opens. If the gate is not opened within its timeout, every held request (and
 * any that arrives later) is answered 503 with a message saying how many had arrived, so nothing hangs.
 */
public final class ResponseGate {
    /** What to do with a held request: send the real response, or the timeout's 503 with this message. */
    interface Held {
        void release(String timeoutMessage);
    }

    private final String name;
    private final int parties;
    private final Duration timeout;
    private final List<Held> held = new ArrayList<>();
    private int arrived;
    private boolean open;
    private String timedOut;
    private ScheduledFuture<?> timer;

    ResponseGate(String name, int parties, Duration timeout) {
        this.name = name;
        this.parties = parties;
        this.timeout = timeout;
    }

    public String name() {
        return name;
    }

    /** Requests that have reached the target and are held (or were, once open). */
    public synchronized int arrived() {
        return arrived;
    }

    /** Waits until at least {@code n} requests have arrived; false if {@code timeout} passed first. */
    public synchronized boolean awaitArrivals(int n, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (arrived < n) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }

    /** Releases every held request (and lets later ones through at once). */
    public void open() {
        List<Held> toRelease;
        synchronized (this) {
            if (open || timedOut != null) {
                return;
            }
            open = true;
            toRelease = new ArrayList<>(held);
            held.clear();
            if (timer != null) {
                timer.cancel(false);
            }
        }
        toRelease.forEach(h -> h.release(null));
    }

    /** Called on the request's event loop; {@code h} runs on that loop again when the gate opens. */
    void arrive(ChannelHandlerContext ctx, Held h) {
        Held onLoop = message -> ctx.executor().execute(() -> h.release(message));
        String refusal;
        synchronized (this) {
            arrived++;
            notifyAll();
            if (!open && timedOut == null) {
                held.add(onLoop);
                if (timer == null) {
                    // Bounded: a test that never opens the gate (too few requests arrived) gets 503s, not a hang.
                    timer = ctx.executor().schedule(this::expire, timeout.toMillis(), TimeUnit.MILLISECONDS);
                }
                return;
            }
            refusal = timedOut;
        }
        onLoop.release(refusal);
    }

    private void expire() {
        List<Held> toRelease;
        String message;
        synchronized (this) {
            if (open) {
                return;
            }
            message = "gate " + name + " was not opened within " + timeout.toMillis() + " ms; " + arrived + " of "
                    + parties + " requests had arrived\n";
            timedOut = message;
            toRelease = new ArrayList<>(held);
            held.clear();
        }
        toRelease.forEach(h -> h.release(message));
    }
}
