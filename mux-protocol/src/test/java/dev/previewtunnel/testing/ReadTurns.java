package dev.previewtunnel.testing;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Watches a channel that reads on demand: the bytes it read, and whether a turn of reads ended without the handler
 * after this one asking for the next (reading stopped, as it must while the peer cannot take more). Goes in front of
 * the handler that decides, nearer the socket; {@link #watch()} starts the watch.
 */
public final class ReadTurns extends ChannelDuplexHandler {
    private final AtomicLong bytes = new AtomicLong();
    private volatile boolean watching;
    private volatile boolean stopped;
    private boolean asked;

    public long bytesRead() {
        return bytes.get();
    }

    public void watch() {
        watching = true;
    }

    /** A turn of reads ended, since {@link #watch()}, with no read asked for. */
    public boolean stoppedWithoutAsking() {
        return stopped;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ByteBuf buf) {
            bytes.addAndGet(buf.readableBytes());
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void read(ChannelHandlerContext ctx) {
        asked = true;
        ctx.read();
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        asked = false;
        ctx.fireChannelReadComplete(); // the handler after this one decides whether to read on
        if (watching && !asked) {
            stopped = true;
        }
    }
}
