package dev.previewtunnel.mux;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.ChannelOutputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.unix.Socket;
import io.netty.channel.unix.UnixChannel;

import java.io.IOException;

/**
 * Turns {@link OutputShutdown} into a TCP half-close once every byte written before it has reached the socket.
 * {@code shutdownOutput()} alone would fail writes still queued in the outbound buffer and lose data.
 *
 * <p>On the native transport, when nothing is left queued (always, after the flush this handler waits for), the
 * FIN is sent by shutting the socket's write side down directly. Netty's {@code shutdownOutput()} builds a
 * {@code ChannelOutputShutdownException}, stack trace included, on every call to fail queued writes even when
 * there are none: 11-14% of each side's event-loop time in the stream-open benchmark (docs/performance.md,
 * finding 16). Netty's own state follows the socket ({@code isOutputShutdown()} reads it), and the same
 * {@link ChannelOutputShutdownEvent} is fired. Anything else (NIO, bytes written meanwhile, flushed or not, a
 * closed channel) takes Netty's path, which fails those writes at once.
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
                    // Not inline: Netty notifies this listener before it has taken the empty write's own entry
                    // out of the pending byte count, which the check below reads.
                    channel.eventLoop().execute(() -> shutdownOutput(channel, promise));
                } else {
                    promise.tryFailure(f.cause());
                }
            });
            return;
        }
        super.write(ctx, msg, promise);
    }

    /** Runs on the channel's event loop, in a task of its own after the flush before it completed. */
    static void shutdownOutput(DuplexChannel channel, ChannelPromise promise) {
        ChannelOutboundBuffer queued = channel.unsafe().outboundBuffer();
        if (channel instanceof UnixChannel unix && unix.fd() instanceof Socket socket && channel.isActive()
                && !socket.isOutputShutdown() && queued != null && queued.isEmpty()
                && queued.totalPendingWriteBytes() == 0) { // isEmpty() counts flushed messages only
            try {
                socket.shutdown(false, true);
            } catch (IOException e) {
                // The peer reset the connection meanwhile: Netty's path reports it the way it always has.
                channel.shutdownOutput(promise);
                return;
            }
            channel.pipeline().fireUserEventTriggered(ChannelOutputShutdownEvent.INSTANCE);
            promise.trySuccess();
            return;
        }
        channel.shutdownOutput(promise);
    }
}
