package dev.previewtunnel.mux;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Moves bytes from its own channel to a peer channel, reading on demand: it asks its channel for the next read
 * only while the peer is writable, and resumes when the peer becomes writable again (the read-on-demand pattern
 * of Netty's proxy example). Memory per direction is therefore bounded by the peer's write high-water mark
 * plus one read (one turn of reads towards a stream on another loop, see below), however fast one side is and
 * however slow the other.
 *
 * <p>Half-close: end of input on this channel is passed on as {@link OutputShutdown} to the peer (TCP FIN or
 * HTTP/2 END_STREAM). A channel is closed once both its directions are finished. Any other close or error
 * aborts the peer (TCP close or RST_STREAM CANCEL), so a failure on one side never leaves the other hanging.
 *
 * <p>The two channels may live on different event loops. Each handler touches its own state only on its own
 * loop; the cross-loop handoff for resuming reads re-checks writability after publishing the wish to read, so
 * a writability change can never be missed.
 *
 * <p>A write handed to an HTTP/2 stream channel on another loop waits in that loop's task queue, counted towards
 * the stream's writability by Netty's estimate of the message, and a stream channel estimates anything that is
 * not a DATA frame (our bytes become DATA frames only in {@link StreamByteAdapter}, on the stream's loop) at 9
 * bytes (plus 32 for the task): while the stream's loop is busy, the stream looks writable however many MiB wait
 * for it (an upload to a target that did not read left the ingress 4.5-15 MiB beyond the window, against a 512 KiB
 * mark). So towards such a stream the relay asks whether to read on only after a round trip through the stream's
 * loop, once everything it wrote is in the stream's own accounting: at most one turn of reads
 * ({@code RelayReads.MAX_READS}) is ever unaccounted.
 */
public final class RelayHandler extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(RelayHandler.class);

    private final Channel peer;
    private RelayHandler partner;
    private Channel self;
    private boolean waitingForPeer;
    private boolean inputDone;
    private boolean outputDone;
    private boolean finished;
    /** True when the peer is a stream on another loop: writes to it are accounted only once they ran there. */
    private boolean confirmWritesOnPeerLoop;
    private final AtomicLong bytesRead = new AtomicLong();
    private RelayListener listener = RelayListener.NONE;

    private RelayHandler(Channel peer) {
        this.peer = peer;
    }

    /** Observer of a relay's end, for byte counts and audit. */
    public interface RelayListener {
        RelayListener NONE = (a, b, cause) -> { };

        /** Called once, on {@code a}'s loop, when channel {@code a} closed; counts are bytes read from each side. */
        void closed(long bytesFromA, long bytesFromB, Throwable cause);
    }

    /**
     * Links two active channels and starts moving bytes both ways. Both channels must have auto-read off; the
     * relay issues the reads. Handlers are added last in each pipeline.
     */
    public static void link(Channel a, Channel b, RelayListener listenerOnA) {
        RelayHandler ha = new RelayHandler(b);
        RelayHandler hb = new RelayHandler(a);
        ha.partner = hb;
        hb.partner = ha;
        ha.listener = listenerOnA == null ? RelayListener.NONE : listenerOnA;
        a.config().setOption(ChannelOption.AUTO_READ, false);
        b.config().setOption(ChannelOption.AUTO_READ, false);
        a.pipeline().addLast("ptun-relay", ha);
        b.pipeline().addLast("ptun-relay", hb);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        self = ctx.channel();
        confirmWritesOnPeerLoop = peer instanceof Http2StreamChannel && peer.eventLoop() != self.eventLoop();
        // Only now, with this handler in place: a channel told earlier to read on could pass bytes to a pipeline
        // that has no relay yet (link may run on the other channel's loop), and they would be dropped.
        RelayReads.linkPeer(self, peer);
        if (self.isActive()) {
            self.read();
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof io.netty.buffer.ByteBuf buf) {
            bytesRead.addAndGet(buf.readableBytes());
            peer.write(msg, peer.voidPromise());
        } else {
            // Only bytes travel through a relay.
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        peer.flush();
        if (confirmWritesOnPeerLoop) {
            // Tasks run in order: this one runs after this turn's writes and flush, so the stream's writability
            // then includes them (see the class comment).
            try {
                peer.eventLoop().execute(() -> self.eventLoop().execute(this::readIfPeerWritable));
            } catch (java.util.concurrent.RejectedExecutionException stopping) {
                ctx.close(); // the peer's loop is shutting down: nothing more will be relayed
            }
        } else {
            readIfPeerWritable();
        }
    }

    private void readIfPeerWritable() {
        if (inputDone) {
            return;
        }
        if (peer.isWritable()) {
            waitingForPeer = false;
            self.read();
        } else {
            waitingForPeer = true;
            // Publish the wish first, then re-check: the peer may have turned writable in between.
            if (peer.isWritable()) {
                waitingForPeer = false;
                self.read();
            }
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            RelayHandler p = partner;
            p.self.eventLoop().execute(() -> {
                if (p.waitingForPeer) {
                    p.readIfPeerWritable();
                }
            });
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof ChannelInputShutdownEvent) {
            if (!inputDone) {
                inputDone = true;
                peer.writeAndFlush(OutputShutdown.INSTANCE).addListener(f -> {
                    if (f.isSuccess()) {
                        partner.onOutputShutdown();
                    }
                });
                closeIfFinished();
            }
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    /** Called from any thread when this handler's channel finished its output (peer's input ended). */
    private void onOutputShutdown() {
        self.eventLoop().execute(() -> {
            outputDone = true;
            closeIfFinished();
        });
    }

    private void closeIfFinished() {
        if (inputDone && outputDone && !finished) {
            finished = true;
            self.close();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        boolean clean = inputDone && outputDone;
        if (!clean) {
            // Aborted: end the other side now rather than leaving it half-open.
            peer.close();
        }
        listener.closed(bytesRead.get(), partner.bytesRead.get(), null);
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (log.isDebugEnabled()) {
            log.debug("relay {} failed: {}", ctx.channel(), cause.toString());
        }
        ctx.close();
        peer.close();
    }

    /** Bytes this relay has read from its own channel so far. */
    public long bytesRead() {
        return bytesRead.get();
    }

    static ChannelFutureListener closeOnFailure() {
        return ChannelFutureListener.CLOSE_ON_FAILURE;
    }
}
