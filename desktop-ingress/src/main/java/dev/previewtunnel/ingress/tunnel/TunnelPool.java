package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.mux.Authority;
import dev.previewtunnel.mux.TunnelClient;
import dev.previewtunnel.mux.TunnelConnection;
import dev.previewtunnel.mux.TunnelError;
import dev.previewtunnel.mux.TunnelStreamException;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A small, bounded set of tunnel connections to one gateway. Streams go to the least-loaded usable connection.
 * Each slot keeps itself connected: when its connection drops (or the gateway sends GOAWAY) it reconnects with
 * jittered exponential backoff. While no connection is up, opening a stream fails at once with
 * {@link TunnelError#GATEWAY_UNREACHABLE} ("since ..., retrying") instead of hanging the browser.
 */
public final class TunnelPool implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TunnelPool.class);
    static final Duration MIN_BACKOFF = Duration.ofMillis(100);
    static final Duration MAX_BACKOFF = Duration.ofSeconds(15);

    private final TunnelClient client;
    private final URI url;
    private final Supplier<String> token;
    private final SslContext ssl;
    private final Duration connectTimeout;
    private final EventLoop scheduler;
    private final List<Slot> slots = new ArrayList<>();
    private volatile boolean closed;
    private volatile StreamObserver observer;

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
        for (int i = 0; i < size; i++) {
            slots.add(new Slot(i));
        }
    }

    /** Starts connecting every slot; returns a future that completes when the first connection is up or fails. */
    public Future<Void> start() {
        Promise<Void> first = scheduler.newPromise();
        for (Slot slot : slots) {
            slot.connect(first);
        }
        return first;
    }

    /**
     * Opens a stream on the least-loaded usable connection. An open that failed before the gateway acted on it
     * (refused past a GOAWAY, connection draining or lost before the answer) is tried once more, on whatever
     * connection is usable then: during a rolling gateway restart a browser request lands on the fresh
     * connection instead of failing.
     */
    public Future<Http2StreamChannel> openStream(Authority target, String grant, Duration timeout) {
        Promise<Http2StreamChannel> result = scheduler.newPromise();
        StreamObserver o = observer;
        if (o != null) {
            long startNanos = System.nanoTime();
            result.addListener(f -> o.settled(result, startNanos));
        }
        openOnce(target, grant, timeout).addListener(first -> {
            if (first.isSuccess()) {
                result.trySuccess((Http2StreamChannel) first.getNow());
            } else if (first.cause() instanceof TunnelStreamException t && t.retryable() && !closed) {
                openOnce(target, grant, timeout).addListener(second -> {
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

    private Future<Http2StreamChannel> openOnce(Authority target, String grant, Duration timeout) {
        TunnelConnection best = null;
        Future<TunnelConnection> pending = null;
        synchronized (this) {
            for (Slot s : slots) {
                TunnelConnection c = s.connection;
                if (c != null && c.isUsable() && (best == null || c.liveStreams() < best.liveStreams())) {
                    best = c;
                }
                // Wait for a connection attempt only before the first connection ever came up; after an
                // outage, fail fast so the browser sees the 502 page at once.
                if (s.connecting != null && !s.everConnected && pending == null) {
                    pending = s.connecting;
                }
            }
        }
        if (best != null) {
            return best.openStream(target, grant, timeout);
        }
        Promise<Http2StreamChannel> result = scheduler.newPromise();
        if (pending == null || closed) {
            result.setFailure(unreachable());
            return result;
        }
        // A connection attempt is under way (first start or a reconnect): wait for it, bounded by its timeout.
        pending.addListener(f -> {
            if (f.isSuccess()) {
                ((TunnelConnection) f.getNow()).openStream(target, grant, timeout).addListener(s -> {
                    if (s.isSuccess()) {
                        result.trySuccess((Http2StreamChannel) s.getNow());
                    } else {
                        result.tryFailure(s.cause());
                    }
                });
            } else {
                result.tryFailure(unreachable());
            }
        });
        return result;
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

    /** A snapshot for status output and error pages. */
    public record Status(int size, int connected, int liveStreams, Instant downSince, String lastError,
                         long reconnects) {
        public String state() {
            return connected > 0 ? "connected" : "reconnecting";
        }
    }

    public synchronized Status status() {
        int connected = 0;
        int live = 0;
        Instant downSince = null;
        String lastError = null;
        long reconnects = 0;
        for (Slot s : slots) {
            if (s.connection != null && s.connection.isUsable()) {
                connected++;
                live += s.connection.liveStreams();
            } else if (s.downSince != null && (downSince == null || s.downSince.isBefore(downSince))) {
                downSince = s.downSince;
            }
            if (s.lastError != null) {
                lastError = s.lastError;
            }
            reconnects += s.reconnects;
        }
        return new Status(slots.size(), connected, live, connected > 0 ? null : downSince, lastError, reconnects);
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
        closed = true;
        List<TunnelConnection> open = new ArrayList<>();
        synchronized (this) {
            for (Slot s : slots) {
                if (s.connection != null) {
                    open.add(s.connection);
                }
            }
        }
        open.forEach(TunnelConnection::close);
    }

    /**
     * After {@link #close()}: waits until every tunnel connection has closed (each closes once its live streams
     * have ended, after GOAWAY) or {@code timeout} has passed. Returns true if all closed in time.
     */
    public boolean awaitClosed(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<TunnelConnection> open = new ArrayList<>();
        synchronized (this) {
            for (Slot s : slots) {
                if (s.connection != null) {
                    open.add(s.connection);
                }
            }
        }
        for (TunnelConnection c : open) {
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
        Instant downSince = Instant.now();
        String lastError;
        int failures;
        long reconnects;
        boolean everConnected;

        Slot(int index) {
            this.index = index;
        }

        void connect(Promise<Void> firstUp) {
            if (closed) {
                return;
            }
            Future<TunnelConnection> attempt = client.connect(url, token.get(), ssl, connectTimeout);
            synchronized (TunnelPool.this) {
                connecting = attempt;
            }
            attempt.addListener(f -> {
                if (f.isSuccess()) {
                    TunnelConnection c = (TunnelConnection) f.getNow();
                    synchronized (TunnelPool.this) {
                        connecting = null;
                        connection = c;
                        everConnected = true;
                        downSince = null;
                        failures = 0;
                    }
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
                        lastError = error;
                        failures++;
                        if (downSince == null) {
                            downSince = Instant.now();
                        }
                    }
                    if (firstUp != null) {
                        firstUp.tryFailure(f.cause());
                    }
                    scheduleReconnect();
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
            }
        }

        private void scheduleReconnect() {
            if (closed) {
                return;
            }
            long base = MIN_BACKOFF.toMillis() << Math.min(failures, 8);
            long capped = Math.min(base, MAX_BACKOFF.toMillis());
            // Full jitter keeps many desktops from reconnecting in lockstep after a gateway restart.
            long delay = capped / 2 + ThreadLocalRandom.current().nextLong(capped / 2 + 1);
            scheduler.schedule(() -> connect(null), delay, TimeUnit.MILLISECONDS);
        }
    }
}
