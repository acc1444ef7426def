package dev.previewtunnel.mux.relay;

import dev.previewtunnel.mux.local.FatalErrors;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.util.ReferenceCountUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Moves bytes from its own channel to a peer channel, reading on demand: it asks its channel for the next read
 * only while the peer is writable, and resumes when the peer becomes writable again (the read-on-demand pattern
 * of Netty's proxy example). Memory per direction is therefore bounded by the peer's write high-water mark
 * plus one read, however fast one side is and however slow the other.
 *
 * <p>Half-close: end of input on this channel is passed on as {@link OutputShutdown} to the peer (TCP FIN or
 * HTTP/2 END_STREAM). A channel is closed once both its directions are finished. Any other close or error
 * aborts the peer (TCP close or RST_STREAM CANCEL), so a failure on one side never leaves the other hanging.
 *
 * <p>Both channels live on one event loop ({@link #link} refuses two): the gateway dials each target on its
 * stream's loop, the ingress opens each stream on its browser connection's loop. So both handlers' state is touched
 * on that one thread and a write counts towards the peer's writability as soon as it is made, which is what keeps
 * the bound above (a write handed to a stream on another loop counted 9 bytes until it ran there: docs/performance.md
 * finding 15).
 */
public final class RelayHandler extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(RelayHandler.class);

    private final Channel peer;
    private RelayHandler partner;
    private Channel self;
    private boolean waitingForPeer;
    /** The peer's last flush left bytes unsent: what this relay writes now waits too (see channelRead). */
    private boolean peerBacklogged;
    private boolean inputDone;
    private boolean outputDone;
    private boolean finished;
    private final AtomicLong bytesRead = new AtomicLong();
    private RelayListener listener = RelayListener.NONE;

    private RelayHandler(Channel peer) {
        this.peer = peer;
    }

    /** Observer of a relay's end, for byte counts and audit. */
    public interface RelayListener {
        RelayListener NONE = (a, b, end) -> { };

        /** Called once, on {@code a}'s loop, when channel {@code a} closed; counts are bytes read from each side. */
        void closed(long bytesFromA, long bytesFromB, End end);
    }

    /** How a relay ended, as seen when channel {@code a} closed. */
    public enum End {
        /** Both directions finished (end of input passed on each way). */
        BOTH_ENDED,
        /** {@code a} closed (or was reset) while {@code b} was still open. */
        A_CLOSED_FIRST,
        /** {@code b} had closed already: its close ended {@code a}. */
        B_CLOSED_FIRST
    }

    /**
     * Links two active channels of one event loop and starts moving bytes both ways. Both channels must have
     * auto-read off; the relay issues the reads. Handlers are added last in each pipeline.
     *
     * @throws IllegalArgumentException if the two channels run on different event loops
     */
    public static void link(Channel a, Channel b, RelayListener listenerOnA) {
        if (a.eventLoop() != b.eventLoop()) {
            throw new IllegalArgumentException("a relay's two channels must share one event loop");
        }
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
        // Only now, with this handler in place: a channel told earlier to read on could pass bytes to a pipeline
        // that has no relay yet (link may run on another thread than the loop), and they would be dropped.
        RelayReads.linkPeer(self, peer);
        // A stream held unread until now (the gateway's while it dialled) is read from here on.
        StalledStreams.mark(self, false);
        if (self.isActive()) {
            self.read();
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof io.netty.buffer.ByteBuf buf) {
            bytesRead.addAndGet(buf.readableBytes());
            // A write to a backlogged peer waits in its outbound buffer for as long as the peer stalls: a view of
            // a decoder's cumulation would keep the whole cumulation meanwhile (StalledStreams, finding 62).
            peer.write(peerBacklogged ? StalledStreams.ownCopy(ctx.alloc(), buf) : buf, peer.voidPromise());
        } else {
            // Only bytes travel through a relay.
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        peer.flush();
        // Bytes left unsent mean the kernel's send buffer is full: this turn's writes wait, the next turn's are
        // copied. So the turn that fills it (at most MAX_READS reads) waits uncopied, and while a reader is slower
        // than the tunnel every later turn is copied. A stream has no outbound buffer (null): what a relay writes
        // to it comes from socket reads, which own their buffers.
        ChannelOutboundBuffer unsent = peer.unsafe().outboundBuffer();
        peerBacklogged = unsent != null && unsent.totalPendingWriteBytes() > 0;
        readIfPeerWritable();
    }

    private void readIfPeerWritable() {
        if (inputDone) {
            return;
        }
        boolean waiting = !peer.isWritable();
        if (waiting != waitingForPeer) {
            waitingForPeer = waiting;
            // Frames that reach a stream channel which is not reading wait in its inbound queue.
            StalledStreams.mark(self, waiting);
        }
        if (!waitingForPeer) {
            self.read();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable() && partner.waitingForPeer) {
            partner.readIfPeerWritable(); // on this same loop: the partner waits for exactly this
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof ChannelInputShutdownEvent) {
            if (!inputDone) {
                endOfInput();
                closeIfFinished();
            }
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    /** This channel's input ended: passes it on to the peer as {@link OutputShutdown}. */
    private void endOfInput() {
        inputDone = true;
        peer.writeAndFlush(OutputShutdown.INSTANCE).addListener(f -> {
            if (f.isSuccess()) {
                partner.onOutputShutdown();
            } else {
                // The peer could not be half-closed (its socket was reset meanwhile): its output can
                // never finish, so it would stay open for good with nothing left to relay. Closed.
                peer.close();
            }
        });
    }

    /** Called on the relay's loop when this handler's channel finished its output (peer's input ended). */
    private void onOutputShutdown() {
        outputDone = true;
        if (!inputDone && self instanceof DuplexChannel && RelayReads.installedOn(self)) {
            // With its FIN sent, a socket's end of input finishes the relay: let Netty close it there rather than
            // half-close it. Its half-close would be shutdown(SHUT_RD) on a socket the kernel has already closed,
            // a NotYetConnectedException with its stack trace built each time (docs/performance.md, finding 48).
            // channelInactive tells that close from any other by the end-of-file read before it.
            self.config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, false);
        }
        closeIfFinished();
    }

    private void closeIfFinished() {
        if (inputDone && outputDone && !finished) {
            finished = true;
            self.close();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (!inputDone && outputDone && RelayReads.sawEndOfInput(self)) {
            // Netty closed the channel at its end of input (half-closure off, see onOutputShutdown): every byte
            // read before it has been passed on, so this ends the relay as the input-shutdown event would.
            finished = true;
            endOfInput();
        }
        boolean clean = inputDone && outputDone;
        End end = clean ? End.BOTH_ENDED : peer.isActive() ? End.A_CLOSED_FIRST : End.B_CLOSED_FIRST;
        if (!clean) {
            // Aborted: end the other side now rather than leaving it half-open.
            peer.close();
        }
        listener.closed(bytesRead.get(), partner.bytesRead.get(), end);
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        FatalErrors.check(cause); // an Error means the process, not this connection, is broken
        if (log.isDebugEnabled()) {
            log.debug("relay {} failed: {}", ctx.channel(), cause.toString());
        }
        ctx.close();
        peer.close();
    }

    /** Bytes read so far from both channels of the relay: a drain's measure of activity; safe from any thread. */
    public long bytesBothWays() {
        RelayHandler p = partner;
        return bytesRead.get() + (p == null ? 0 : p.bytesRead.get());
    }

    /** The channel this relay writes to. */
    Channel peer() {
        return peer;
    }

    /** Bytes this relay has read from its own channel so far. */
    public long bytesRead() {
        return bytesRead.get();
    }
}
