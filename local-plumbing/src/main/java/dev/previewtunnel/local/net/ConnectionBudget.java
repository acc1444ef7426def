package dev.previewtunnel.local.net;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.util.AttributeKey;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How many connections one listener may hold: at most {@code maxTotal} open, of which at most {@code maxPending}
 * not yet trusted (not authenticated, or still in a handshake). A listener calls {@link #admit} for every accepted
 * channel before it adds its handlers. Over the total, the new channel is closed at once (accept-and-close: the
 * file descriptor is freed immediately, nothing is parsed). Over the pending cap, the OLDEST untrusted connection
 * is closed instead and the new one admitted: idle sockets cannot lock a honest client out (it sends its request
 * at once, the squatters do not), and the pending cap being lower than the total keeps headroom for connections
 * that proved themselves however many sockets another local process opens.
 *
 * <p>"Oldest" means accepted first. A listener installs {@link #acceptOrder()} as its server handler, which numbers
 * each connection on the accepting loop; admission then runs on the child's own loop, and two loops admit in any
 * interleaving (a honest client accepted after a burst of idle sockets was evicted by the burst's stragglers still
 * queued on the busier loop: a CI failure of BrowserConnectionBudgetTest). A connection made untrusted again is
 * numbered anew, as the newest.
 *
 * <p>On EMFILE Netty's acceptor turns auto-read off on the listener for one second (ServerBootstrapAcceptor), so a
 * full descriptor table does not spin the accept loop; caps above the process's descriptor limit are clipped by
 * {@link #clipToFdLimit} so that the budget, not the OS, is what refuses.
 */
public final class ConnectionBudget {
    private static final Logger log = LoggerFactory.getLogger(ConnectionBudget.class);
    private static final AttributeKey<Place> PLACE = AttributeKey.valueOf("ptun.budget.place");
    /** The accept number {@link AcceptOrder} gave a channel, read at admission. */
    private static final AttributeKey<Long> ACCEPTED = AttributeKey.valueOf("ptun.budget.accepted");
    /** Descriptors kept for everything that is not a counted connection: jars, logs, epoll, targets. */
    static final int FD_RESERVE = 128;
    private static final long LOG_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final String name;
    private final int maxTotal;
    private final int maxPending;
    private final Duration pendingTimeout;
    private final boolean trustAll;
    private final AtomicInteger total = new AtomicInteger();
    private final AtomicInteger pending = new AtomicInteger();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong evicted = new AtomicLong();
    /** Accept numbers, and the numbers of connections made untrusted again: one sequence, so "oldest" is one order. */
    private final AtomicLong numbers = new AtomicLong();
    /** Untrusted connections by number, oldest first (at most maxPending and a few closing). */
    private final ConcurrentSkipListMap<Long, Channel> untrustedByAge = new ConcurrentSkipListMap<>();
    private final AcceptOrder acceptOrder = new AcceptOrder();
    private final AtomicLong lastLog = new AtomicLong(System.nanoTime() - LOG_EVERY_NANOS);

    /**
     * @param name           what the listener is, for the log line when the budget is full
     * @param maxTotal       open connections, trusted or not
     * @param maxPending     connections not yet {@link #trust trusted}; at most {@code maxTotal}
     * @param pendingTimeout a connection still untrusted this long after accept is closed; null for none. Only the
     *                       first untrusted period has it: one {@link #untrust made untrusted again} has none
     */
    public ConnectionBudget(String name, int maxTotal, int maxPending, Duration pendingTimeout) {
        this(name, maxTotal, maxPending, pendingTimeout, false);
    }

    private ConnectionBudget(String name, int maxTotal, int maxPending, Duration pendingTimeout, boolean trustAll) {
        if (maxTotal < 1 || maxPending < 1 || maxPending > maxTotal) {
            throw new IllegalArgumentException("need 1 <= maxPending <= maxTotal, got " + maxPending + " and "
                    + maxTotal);
        }
        this.name = name;
        this.maxTotal = maxTotal;
        this.maxPending = maxPending;
        this.pendingTimeout = pendingTimeout;
        this.trustAll = trustAll;
    }

    /** A budget where every connection counts as trusted from accept: only the total is capped. */
    public static ConnectionBudget total(String name, int maxTotal) {
        return new ConnectionBudget(name, maxTotal, maxTotal, null, true);
    }

    /**
     * The handler a listener installs on its server channel ({@code ServerBootstrap.handler}): numbers each accepted
     * channel in accept order, on the accepting loop, before the channel is handed to its own loop.
     */
    public ChannelHandler acceptOrder() {
        return acceptOrder;
    }

    /**
     * Counts {@code ch} (just accepted, on its event loop) or closes it when the budget is spent. Returns false if
     * it was refused: the caller adds no handlers then.
     */
    public boolean admit(Channel ch) {
        if (total.incrementAndGet() > maxTotal) {
            total.decrementAndGet();
            return refuse(ch, "total");
        }
        Long accepted = ch.attr(ACCEPTED).getAndSet(null);
        Place place = new Place(this, ch, !trustAll, accepted != null ? accepted : numbers.getAndIncrement());
        ch.attr(PLACE).set(place);
        if (!trustAll) {
            // Queued before the eviction: a straggler accepted before the newest may itself be the oldest.
            untrustedByAge.put(place.number, ch);
            if (pending.incrementAndGet() > maxPending) {
                evictOldest();
            }
        }
        if (!trustAll && pendingTimeout != null) {
            // Cancelled when the connection is trusted or closes (Place.leaveUntrusted). Armed before the close
            // listener, which runs at once on a channel already closed and must find it to cancel. Left scheduled,
            // every accepted connection kept its closed channel reachable for the whole timeout (~1,500 channels,
            // ~3 MiB of the ingress's heap, in the open figure: docs/performance.md, finding 55).
            place.deadline = ch.eventLoop().schedule(() -> {
                if (place.untrusted.get()) {
                    ch.close();
                }
            }, pendingTimeout.toMillis(), TimeUnit.MILLISECONDS);
        }
        ch.closeFuture().addListener(f -> {
            total.decrementAndGet();
            place.leaveUntrusted();
        });
        return true;
    }

    /**
     * {@code ch} proved itself (a valid credential, a completed handshake): it stops counting against the pending
     * cap and the pending deadline. Idempotent; a channel no budget admitted is ignored. Call it on the channel's
     * own loop, as {@link #untrust} and the close listener run: that keeps its eviction number still while queued.
     */
    public static void trust(Channel ch) {
        Place place = ch.attr(PLACE).get();
        if (place != null) {
            place.leaveUntrusted();
        }
    }

    /**
     * {@code ch} counts as untrusted again, newest in the eviction order: a local endpoint's keep-alive connection
     * waiting for its next request holds nothing worth keeping, so clients that leave idle connections behind
     * (a pooled HTTP client per call) cannot fill the total and lock the next caller out. It gets no pending
     * deadline: that is the first period's, from accept. Idempotent; on the channel's own loop, as {@link #trust}.
     */
    public static void untrust(Channel ch) {
        Place place = ch.attr(PLACE).get();
        if (place == null) {
            return;
        }
        ConnectionBudget budget = place.budget;
        if (!budget.trustAll && place.untrusted.compareAndSet(false, true)) {
            place.number = budget.numbers.getAndIncrement();
            budget.untrustedByAge.put(place.number, ch);
            if (budget.pending.incrementAndGet() > budget.maxPending) {
                budget.evictOldest();
            }
        }
    }

    /**
     * Closes the oldest untrusted connection to make room, on its own loop; its close listener gives its place back
     * (until then the pending count is one over, for a moment). One trusted before that turn of its loop (its
     * request was being read as it was chosen) is kept: its trust gave the place back already.
     */
    private void evictOldest() {
        Map.Entry<Long, Channel> first = untrustedByAge.pollFirstEntry();
        if (first == null) {
            return;
        }
        Channel oldest = first.getValue();
        long number = first.getKey();
        note("pending");
        oldest.eventLoop().execute(() -> {
            Place place = oldest.attr(PLACE).get();
            if (place != null && !(place.untrusted.get() && place.number == number)) {
                return; // trusted since (and perhaps untrusted again, with a newer number)
            }
            evicted.incrementAndGet();
            oldest.config().setOption(ChannelOption.SO_LINGER, 0);
            oldest.close();
        });
    }

    private boolean refuse(Channel ch, String which) {
        refused.incrementAndGet();
        // RST rather than FIN: the descriptor and the kernel's socket go at once, with no TIME_WAIT to keep.
        ch.config().setOption(ChannelOption.SO_LINGER, 0);
        ch.close();
        note(which);
        return false;
    }

    private void note(String which) {
        long last = lastLog.get();
        long now = System.nanoTime();
        if (now - last >= LOG_EVERY_NANOS && lastLog.compareAndSet(last, now)) {
            log.warn("{}: connection budget full ({} cap reached: {} open, {} not yet trusted; caps {} and {}); "
                    + "refusing new connections or closing the oldest untrusted ones", name, which, total.get(),
                    pending.get(), maxTotal, maxPending);
        }
    }

    public int open() {
        return total.get();
    }

    public int pending() {
        return pending.get();
    }

    /** Connections closed at accept because the total was spent. */
    public long refused() {
        return refused.get();
    }

    /** Untrusted connections closed to make room (for a later-accepted one, or a straggler admitted late itself). */
    public long evicted() {
        return evicted.get();
    }

    public int maxTotal() {
        return maxTotal;
    }

    public int maxPending() {
        return maxPending;
    }

    /** The process's descriptor limit ({@code ulimit -n}, soft; Long.MAX_VALUE if unlimited), or -1 where unknown. */
    public static long fdLimit() {
        return DescriptorLimit.current();
    }

    /**
     * {@code cap} lowered to what the descriptor limit can give ({@code limit} minus a reserve for everything
     * else), logged when it is lowered: a cap the OS cannot honour would let EMFILE, not the budget, refuse, and
     * EMFILE refuses the honest connections too.
     */
    public static int clipToFdLimit(String setting, int cap, long limit) {
        if (limit <= 0) {
            return cap;
        }
        long usable = Math.max(1, limit - FD_RESERVE);
        if (cap <= usable) {
            return cap;
        }
        log.warn("{} {} is above what the descriptor limit ({} open files, ulimit -n) leaves; using {}", setting,
                cap, limit, usable);
        return (int) usable;
    }

    /**
     * One admitted channel in its budget. {@code number} is its key in the eviction order; it changes only on the
     * channel's own loop while the channel is out of that order (trusted), so the order's keys never move.
     */
    private static final class Place {
        final ConnectionBudget budget;
        final Channel channel;
        final AtomicBoolean untrusted;
        volatile long number;
        /** The pending deadline of the first untrusted period (from accept), or null; never re-armed. */
        volatile Future<?> deadline;

        Place(ConnectionBudget budget, Channel channel, boolean untrusted, long number) {
            this.budget = budget;
            this.channel = channel;
            this.untrusted = new AtomicBoolean(untrusted);
            this.number = number;
        }

        /** Trusted or closed: gives its pending place back, once. */
        void leaveUntrusted() {
            if (untrusted.compareAndSet(true, false)) {
                budget.pending.decrementAndGet();
                budget.untrustedByAge.remove(number, channel);
                Future<?> d = deadline;
                if (d != null) {
                    deadline = null;
                    d.cancel(false);
                }
            }
        }
    }

    /** See {@link #acceptOrder()}; one per budget, shared by nothing else. */
    @ChannelHandler.Sharable
    private final class AcceptOrder extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Channel child) {
                child.attr(ACCEPTED).set(numbers.getAndIncrement());
            }
            ctx.fireChannelRead(msg);
        }
    }
}
