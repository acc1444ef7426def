package dev.previewtunnel.mux;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.DuplexChannel;

/**
 * Turns {@link OutputShutdown} into a TCP half-close once every byte written before it has reached the socket.
 * {@code shutdownOutput()} alone would fail writes still queued in the outbound buffer and lose data.
 */
@ChannelHandler.Sharable
public final class SocketHalfCloseHandler extends ChannelOutboundHandlerAdapter {
    public static final SocketHalfCloseHandler INSTANCE = new SocketHalfCloseHandler();

    private SocketHalfCloseHandler() {
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
        if (msg instanceof OutputShutdown) {
            DuplexChannel channel = (DuplexChannel) ctx.channel();
            // Writes complete in order: once this empty write is done, all earlier bytes are on the wire.
            ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(f -> {
                if (f.isSuccess()) {
                    channel.shutdownOutput(promise);
                } else {
                    promise.tryFailure(f.cause());
                }
            });
            return;
        }
        super.write(ctx, msg, promise);
    }
}
