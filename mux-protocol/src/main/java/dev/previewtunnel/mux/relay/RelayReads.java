package dev.previewtunnel.mux.relay;

import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.util.UncheckedBooleanSupplier;

/**
 * How much a relayed channel reads per {@code read()} call: up to {@link #MAX_READS} buffers (socket reads, or
 * DATA frames on a stream channel) while the last read filled its buffer and the peer is still writable.
 *
 * <p>Why: with auto-read off, Netty's handles stop after one read per {@code read()} call, so a relay moved one
 * 16 KiB read per event-loop turn, each followed by its own flush: an HTTP/2 DATA frame and a WebSocket message
 * written with one {@code writev}, or one {@code send} to a socket, per 16 KiB. Reading on while the peer accepts
 * more lets one flush carry several reads. The memory bound of the relay does not change: reading stops as soon
 * as the peer turns unwritable, so at most one read lands beyond the peer's write high-water mark, as before. That
 * needs the peer's writability to count each write as it is made: the peer shares the channel's loop
 * ({@link RelayHandler#link}).
 *
 * <p>One instance per channel, installed before the channel's first read (Netty keeps the first handle it makes);
 * the peer is known only later, once {@link RelayHandler} is in the channel's pipeline. Until then, or on a channel
 * without it, a {@code read()} reads once. Buffer sizes still come from {@link ReadBuffers#allocator()}.
 */
final class RelayReads implements RecvByteBufAllocator {
    /** 8 x 16 KiB: a flush per 128 KiB at most, a turn short enough to keep the event loop fair among streams. */
    static final int MAX_READS = 8;

    private final RecvByteBufAllocator sizes;
    /** Set and read on the channel's loop (the peer's too). */
    private Channel peer;
    /** Whether a read found the end of the channel's input; set and read on the channel's loop. */
    private boolean endOfInput;

    RelayReads(RecvByteBufAllocator sizes) {
        this.sizes = sizes;
    }

    /** Lets {@code channel} read on while {@code peer} is writable, if its reads are a {@code RelayReads}. */
    static void linkPeer(Channel channel, Channel peer) {
        if (channel.config().getRecvByteBufAllocator() instanceof RelayReads reads) {
            reads.peer = peer;
        }
    }

    /**
     * Whether {@code channel}'s input has ended (a read returned end-of-file), if its reads are a
     * {@code RelayReads}: how {@link RelayHandler} tells a close that Netty made at end of input, once half-closure
     * was switched off, from any other close.
     */
    static boolean sawEndOfInput(Channel channel) {
        return channel.config().getRecvByteBufAllocator() instanceof RelayReads reads && reads.endOfInput;
    }

    /** Whether {@code channel} reads through a {@code RelayReads}, which watches for its end of input. */
    static boolean installedOn(Channel channel) {
        return channel.config().getRecvByteBufAllocator() instanceof RelayReads;
    }

    @Override
    public Handle newHandle() {
        return new ReadWhilePeerWritable(sizes.newHandle());
    }

    /** The sizes handle does the bookkeeping; only the decision to read on, and the count it needs, are ours. */
    private final class ReadWhilePeerWritable extends DelegatingHandle implements ExtendedHandle {
        private int reads;
        private final UncheckedBooleanSupplier filledItsBuffer = () -> attemptedBytesRead() == lastBytesRead();

        ReadWhilePeerWritable(Handle delegate) {
            super(delegate);
        }

        @Override
        public void reset(ChannelConfig config) {
            super.reset(config);
            reads = 0;
        }

        @Override
        public void incMessagesRead(int numMessages) {
            super.incMessagesRead(numMessages);
            reads += numMessages;
        }

        @Override
        public void lastBytesRead(int bytes) {
            super.lastBytesRead(bytes);
            if (bytes < 0) { // both transports report end-of-file as -1
                endOfInput = true;
            }
        }

        @Override
        public boolean continueReading() {
            return continueReading(filledItsBuffer);
        }

        @Override
        public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
            // Not the delegate's rule, which stops after one read whenever auto-read is off.
            Channel p = peer;
            return p != null && reads < MAX_READS && lastBytesRead() > 0 && maybeMoreDataSupplier.get()
                    && p.isWritable();
        }

        @Override
        public void readComplete() {
            super.readComplete();
            // A turn ends here. A stream channel fed by its parent's read loop gets no reset() between turns.
            reads = 0;
        }
    }
}
