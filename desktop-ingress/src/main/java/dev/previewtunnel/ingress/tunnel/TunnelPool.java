package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;

import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The tunnel connections to one gateway, one {@link LoopSlice} per event loop of the client's group, each owning
 * connections on its own loop. A stream is always opened on a connection of the caller's loop, the loop of the
 * browser connection that relays it, so a relay's two sides share one loop, as on the gateway (docs/architecture.md
 * "Threads and memory"; the hand-offs this removes caused docs/performance.md finding 15). The price: while one
 * loop's connections reconnect, that loop's new streams wait for them (at most the open timeout, then
 * {@code GATEWAY_UNREACHABLE}, see {@link StreamOpening}) even when another loop's are up.
 */
public final class TunnelPool implements AutoCloseable {
    /** The most connections one pool keeps; {@code run --pool} is checked against it. */
    public static final int MAX_SIZE = 64;

    private final Map<EventLoop, LoopSlice> slices = new IdentityHashMap<>();
    private final List<LoopSlice> inOrder = new ArrayList<>();
    private final EventLoop anyLoop;
    private volatile boolean closed;
    private volatile boolean started;
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

    /** The connections a pool of {@code size} keeps on {@code loops} event loops: at least one per loop. */
    public static int connections(int size, int loops) {
        return Math.max(size, loops);
    }

    /**
     * {@code size} connections spread over the loops of {@code client}'s group, at least one per loop (every loop
     * must be able to open its own streams): {@link #connections} in all, the first {@code size % loops} loops
     * taking one more than the others.
     */
    public TunnelPool(TunnelClient client, URI url, Supplier<String> token, SslContext ssl, int size,
                      Duration connectTimeout) {
        if (size < 1 || size > MAX_SIZE) {
            throw new IllegalArgumentException("pool size must be in [1, " + MAX_SIZE + "]");
        }
        TunnelDial dial = new TunnelDial(client, url, token, ssl, connectTimeout);
        List<EventLoop> loops = client.loops();
        int index = 0;
        for (int i = 0; i < loops.size(); i++) {
            int share = Math.max(1, size / loops.size() + (i < size % loops.size() ? 1 : 0));
            LoopSlice slice = new LoopSlice(loops.get(i), dial, index, share);
            index += share;
            slices.put(loops.get(i), slice);
            inOrder.add(slice);
        }
        this.anyLoop = loops.get(0);
    }

    /** Starts connecting every slot; returns a future that completes when the first connection is up or fails. */
    public Future<Void> start() {
        Promise<Void> first = anyLoop.newPromise();
        started = true;
        inOrder.forEach(s -> s.start(first));
        return first;
    }

    /**
     * Opens a stream on a connection of {@code caller}, the event loop of the browser connection that will relay
     * it: the returned future completes on {@code caller} and its stream's {@code eventLoop()} is {@code caller}.
     * An open that failed before the gateway acted on it (refused past a GOAWAY, connection draining or lost before
     * the answer) is tried once more, on whatever connection of that loop is usable then: during a rolling gateway
     * restart a browser request lands on the fresh connection instead of failing.
     */
    public Future<Http2StreamChannel> openStream(Authority target, String grant, Duration timeout, EventLoop caller) {
        Promise<Http2StreamChannel> result = caller.newPromise();
        StreamObserver o = observer;
        if (o != null) {
            long startNanos = System.nanoTime();
            result.addListener(f -> o.settled(result, startNanos));
        }
        LoopSlice slice = slices.get(caller);
        if (slice == null) {
            // A pool never started answers every caller as unreachable (as a test's embedded loop may ask); a
            // running one serves only its own loops, the browser connections' loops, by construction.
            result.setFailure(!started || closed ? StreamOpening.unreachable(inOrder.get(0))
                    : new IllegalArgumentException("the caller's event loop is not one of this pool's loops"));
            return result;
        }
        StreamOpening.open(slice, target, grant, timeout).addListener(first -> {
            if (first.isSuccess()) {
                result.trySuccess((Http2StreamChannel) first.getNow());
            } else if (first.cause() instanceof TunnelStreamException t && t.retryable() && !closed) {
                StreamOpening.open(slice, target, grant, timeout).addListener(second -> {
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

    /**
     * A snapshot for status output, metrics and error pages, over every loop's connections.
     *
     * @param size        connections the pool keeps ({@code max(--pool, event loops)}, see the constructor)
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

    public Status status() {
        LoopSlice.Counts sum = LoopSlice.Counts.NONE;
        for (LoopSlice slice : inOrder) {
            sum = sum.plus(slice.counts());
        }
        // Nothing connected means no slice is: each slice's down time is there, the earliest is the pool's.
        LoopSlice.Counts all = sum.settled();
        return new Status(all.size(), all.connected(), all.connecting(), all.draining(), all.liveStreams(),
                all.downSince(), all.lastError(), all.reconnects());
    }

    /** Live streams of each usable connection, loop by loop in slot order: shows how streams were spread. */
    public List<Integer> liveStreamsPerConnection() {
        List<Integer> counts = new ArrayList<>();
        inOrder.forEach(s -> counts.addAll(s.liveStreamsPerConnection()));
        return counts;
    }

    @Override
    public void close() {
        close(Duration.ZERO);
    }

    /**
     * Stops reconnecting, abandons the connect attempts in flight and drains every connection, including those the
     * gateway is draining (GOAWAY) that still carry streams: each closes once its streams end, within {@code drain}.
     */
    public void close(Duration drain) {
        closed = true;
        inOrder.forEach(s -> s.close(drain));
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

    private List<TunnelConnection> openedConnections() {
        List<TunnelConnection> all = new ArrayList<>();
        inOrder.forEach(s -> all.addAll(s.openedConnections()));
        return all;
    }
}
