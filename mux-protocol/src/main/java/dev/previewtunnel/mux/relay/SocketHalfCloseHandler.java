package dev.previewtunnel.mux.relay;

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
import java.util.concurrent.RejectedExecutionException;

/**
 * Turns {@link OutputShutdown} into a TCP half-close once every byte written before it has reached the socket.
 * {@code shutdownOutput()} alone would fail writes still queued in the outbound buffer and lose data.
 *
 * <p>On the native transport, when nothing else is queued by then, the FIN is sent by shutting the socket's write
 * side down directly. Netty's {@code shutdownOutput()} builds a {@code ChannelOutputShutdownException}, stack
 * trace included, on every call to fail queued writes even when there are none: 11-14% of each side's event-loop
 * time in the stream-open benchmark (docs/performance.md, finding 16). The rest follows Netty's own order: the
 * promise is made uncancellable, completed (failed if the socket refuses, e.g. after a reset), then
 * {@link ChannelOutputShutdownEvent} fires; Netty's state follows the socket ({@code isOutputShutdown()} reads
 * it). Unlike Netty's path the outbound buffer stays: nothing may be written after {@link OutputShutdown} (a
 * flushed write would fail with EPIPE and close the channel). Anything else (NIO, a write still queued, a closed
 * channel) takes Netty's path.
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
                if (!f.isSuccess()) {
                    promise.tryFailure(f.cause());
                    return;
                }
                try {
                    // Not inline: Netty notifies this listener before it has taken the empty write's own entry
                    // out of the pending byte count, which the check below reads.
                    channel.eventLoop().execute(() -> shutdownOutput(channel, promise));
                } catch (RejectedExecutionException e) {
                    promise.tryFailure(e); // the event loop is shutting down
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
            if (!promise.setUncancellable()) {
                return;
            }
            try {
                socket.shutdown(false, true);
                promise.trySuccess();
            } catch (IOException | RuntimeException e) {
                // A reset meanwhile: ENOTCONN comes as Netty's NotYetConnectedException. Netty's own path fails
                // the promise the same way and still fires the event.
                promise.tryFailure(e);
            }
            channel.pipeline().fireUserEventTriggered(ChannelOutputShutdownEvent.INSTANCE);
            return;
        }
        channel.shutdownOutput(promise);
    }
}
