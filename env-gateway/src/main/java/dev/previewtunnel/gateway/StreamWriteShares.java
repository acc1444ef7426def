package dev.previewtunnel.gateway;

import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.WriteBufferWaterMark;

import java.util.LinkedHashSet;
import java.util.Set;

/**
 * Splits one tunnel connection's budget for queued target bytes ({@code --max-queued-bytes}) among its live
 * streams by setting each stream's write high-water mark: {@code budget / streams}, rounded down to a power of two,
 * between {@link #MIN_HIGH} and the configured per-stream mark (512 KiB by default).
 *
 * <p>Why: the gateway's relay stops reading a target while its stream is not writable, i.e. while the stream holds
 * more unsent bytes than its high-water mark. A fixed mark bounds memory per stream only: 1,000 busy streams behind
 * a connection held 1,000 x 512 KiB (docs/performance.md, finding 3). Sharing a budget keeps one stream's full
 * throughput (it gets the whole per-stream mark) and bounds many streams together.
 *
 * <p>Why not one shared counter that pauses all target reads at the budget: bytes queued on a stream whose peer
 * stopped reading can never be sent, so a few stalled streams would hold such a counter full forever and starve
 * every other stream of the connection (a test of that design deadlocked exactly so). Per-stream marks keep a
 * stalled stream's cost to its own share.
 *
 * <p>Bound: marks only stop reads, they release nothing, so a stream keeps what it queued under an earlier, larger
 * share. When a connection's streams are open before they fill: about {@code max(budget, streams x MIN_HIGH)} plus
 * one read (up to 16 KiB, {@link dev.previewtunnel.mux.relay.ReadBuffers#MAX_READ}) per stream. When every stream fills
 * before the next one opens, the worst case (held until those streams drain) is the sum of the shares each stream
 * had when it opened, {@code highFor(budget, maxHigh, 1) + ... + highFor(budget, maxHigh, n)}, plus one read
 * each: 2.9 MiB for 20 streams on a 1 MiB budget, about 63 MiB for 1,000 streams on the default 8 MiB, against
 * {@code n x maxHigh} (10 and 500 MiB) without the budget. The mark is recomputed when streams come and go and
 * applied to all streams only when its value changes (a handful of times as a connection grows to hundreds of
 * streams). Confined to the connection's event loop, which its streams share.
 */
final class StreamWriteShares {
    /** The smallest per-stream mark: below it, writability would flip on almost every frame. */
    static final int MIN_HIGH = 32 * 1024;

    private final long budget;
    private final int maxHigh;
    private final Set<Channel> streams = new LinkedHashSet<>();
    private int high;

    StreamWriteShares(long budget, int maxHigh) {
        this.budget = budget;
        this.maxHigh = maxHigh;
        this.high = maxHigh;
    }

    /** Gives {@code stream} its share now and until it closes. */
    void add(Channel stream) {
        streams.add(stream);
        stream.closeFuture().addListener(f -> remove(stream));
        if (!rebalance()) {
            apply(stream, high);
        }
    }

    private void remove(Channel stream) {
        if (streams.remove(stream)) {
            rebalance();
        }
    }

    /** Recomputes the mark; true when it changed and was applied to every stream. */
    private boolean rebalance() {
        int next = highFor(budget, maxHigh, streams.size());
        if (next == high) {
            return false;
        }
        high = next;
        for (Channel s : streams) {
            apply(s, next);
        }
        return true;
    }

    static int highFor(long budget, int maxHigh, int streams) {
        long share = budget / Math.max(1, streams);
        if (share >= maxHigh) {
            return maxHigh;
        }
        return (int) Math.max(MIN_HIGH, Long.highestOneBit(share));
    }

    private static void apply(Channel stream, int high) {
        stream.config().setOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(high / 2, high));
    }

    /** The current per-stream high-water mark. */
    int high() {
        return high;
    }
}
