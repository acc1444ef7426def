package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.handler.codec.http2.Http2StreamChannel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A token holder without a valid grant: {@code threads} threads, each opening streams with a bad-signature grant
 * on a connection of the same token, {@code inFlight} at a time, and reconnecting (a fresh connection) every
 * {@code perConnection} opens, until {@code total} opens were answered or the deadline passed. Counts the answers
 * by kind; an accepted stream would be a failure of the test (counted, closed).
 */
final class BadGrantFlood {
    final AtomicLong answered = new AtomicLong();
    final AtomicLong grantRefused = new AtomicLong();
    final AtomicLong coolDownRefused = new AtomicLong();
    final AtomicLong other = new AtomicLong();
    final AtomicLong accepted = new AtomicLong();
    final AtomicLong connections = new AtomicLong();
    private final List<Thread> threads = new ArrayList<>();
    private final List<Throwable> errors = new ArrayList<>();

    BadGrantFlood(TokenFloodGateway gw, String token, String badGrant, Authority target, int threadCount,
                  int inFlight, int perConnection, long total, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        AtomicLong started = new AtomicLong();
        for (int i = 0; i < threadCount; i++) {
            Thread t = new Thread(() -> {
                try {
                    while (started.get() < total && System.nanoTime() < deadline) {
                        TunnelConnection c = gw.connect(token);
                        connections.incrementAndGet();
                        Semaphore permits = new Semaphore(inFlight);
                        for (int n = 0; n < perConnection && started.getAndIncrement() < total
                                && System.nanoTime() < deadline; n++) {
                            permits.acquire();
                            c.openStream(target, badGrant, Duration.ofSeconds(10)).addListener(f -> {
                                classify(f.isSuccess() ? f.getNow() : null, f.cause());
                                permits.release();
                            });
                        }
                        if (!permits.tryAcquire(inFlight, 30, TimeUnit.SECONDS)) {
                            throw new AssertionError("flood answers did not arrive");
                        }
                        c.close();
                    }
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            }, "bad-grant-flood-" + i);
            threads.add(t);
        }
    }

    private void classify(Object stream, Throwable cause) {
        answered.incrementAndGet();
        if (stream instanceof Http2StreamChannel s) {
            accepted.incrementAndGet();
            s.close();
        } else if (cause instanceof TunnelStreamException t && t.error() == TunnelError.TOO_MANY_STREAMS
                && "grant_failure_cooldown".equals(t.detail())) {
            coolDownRefused.incrementAndGet();
        } else if (cause instanceof TunnelStreamException t && t.error() == TunnelError.GRANT_REFUSED) {
            grantRefused.incrementAndGet();
        } else {
            other.incrementAndGet();
        }
    }

    BadGrantFlood start() {
        threads.forEach(Thread::start);
        return this;
    }

    boolean running() {
        return threads.stream().anyMatch(Thread::isAlive);
    }

    /** Waits for every flood thread (each bounded by the flood's deadline) and rethrows the first failure. */
    void join() throws Exception {
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(90));
            if (t.isAlive()) {
                throw new AssertionError(t.getName() + " did not finish");
            }
        }
        synchronized (errors) {
            if (!errors.isEmpty()) {
                AssertionError e = new AssertionError("flood thread failed", errors.get(0));
                throw e;
            }
        }
    }
}
