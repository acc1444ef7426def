package dev.previewtunnel.testing;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.util.ReferenceCountUtil;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * A pipeline's far end whose writes never leave on their own: each message is released and its promise held until
 * the test completes or fails it, as a peer's closed window or a full socket would hold it. Use on the channel's loop.
 */
public final class HeldWrites extends ChannelOutboundHandlerAdapter {
    private final Deque<ChannelPromise> held = new ArrayDeque<>();

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        ReferenceCountUtil.release(msg);
        held.add(promise);
    }

    /** Writes waiting now. */
    public int count() {
        return held.size();
    }

    /** The oldest write waiting, taken off the list: the test completes or fails it. */
    public ChannelPromise next() {
        return held.remove();
    }

    /** Fails every write waiting (the peer left). */
    public void failAll() {
        ChannelPromise p;
        while ((p = held.poll()) != null) {
            p.tryFailure(new IllegalStateException("the peer left"));
        }
    }
}
