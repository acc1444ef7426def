package dev.previewtunnel.mux.relay;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;

/**
 * Counts the bytes a socket channel reads and is asked to write, for a drain by activity ({@link DrainWatch}):
 * only the channel's event loop adds, anyone may read the count. Sits at the head of the pipeline and passes
 * everything on untouched (it never holds or releases a buffer).
 */
public final class ByteActivity extends ChannelDuplexHandler {
    public static final String NAME = "ptun-activity";

    private volatile long bytes; // single writer (the event loop), so += on the volatile is safe

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ByteBuf buf) {
            bytes += buf.readableBytes();
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof ByteBuf buf) {
            bytes += buf.readableBytes();
        }
        ctx.write(msg, promise);
    }

    /** Bytes read plus bytes written through {@code channel} so far; 0 without this handler. */
    public static long of(Channel channel) {
        ByteActivity a = channel.pipeline().get(ByteActivity.class);
        return a == null ? 0 : a.bytes;
    }
}
