package dev.previewtunnel.mux.relay;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2ResetFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2FrameStream;
import io.netty.handler.codec.http2.Http2FrameStreamEvent;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Map;

/**
 * On a tunnel connection, between the HTTP/2 codec and the multiplex handler: gives the DATA frames of a stream whose
 * relay has stopped reading (its peer is not writable) a buffer of their own before they wait in the stream
 * channel's inbound queue.
 *
 * <p>Why: a DATA payload is a slice of the HTTP/2 decoder's composite cumulation, whose parts are slices of the
 * WebSocket decoder's ({@code BoundedCompositeCumulator}, up to 16 parts each), so one waiting slice keeps every
 * buffer behind it. A stalled stream's frames arrive one by one between other streams' frames and each kept a
 * different set: its 1 MiB window kept 3.7-6.5 MiB over {@code wss://} (docs/performance.md, finding 62). Copied,
 * a stalled stream keeps what it queued. Frames a reading stream takes at once pass as they are ({@link
 * RelayHandler} copies them only when its socket is backlogged). A stream is stalled from when its relay stops reading
 * until it reads again, a gateway's stream from its {@code CONNECT} until its relay is linked (the grant check and the
 * dial), and on the ingress an HTTP exchange's stream while its browser connection is full, and a stream from the
 * {@code 200} (or {@code 101}) the browser is sent until its relay is linked: whoever stops reading marks it.
 *
 * <p>A stalled stream may also queue at most its window at 64 bytes a frame in DATA frames; the next one resets it
 * ({@code ENHANCE_YOUR_CALM}). Its window bounds the bytes it queues, not the frames: a peer sending its window one
 * byte per frame queued a frame object per byte, and a gateway with a 64 MiB heap ran out of it after ~289,000 of
 * them (docs/security.md, hostile peers, item 11). Our own peers send whole socket reads. A stalled stream the peer
 * resets is closed at once ({@link OnReset#CLOSE}): its channel would otherwise keep its queued frames until read,
 * while the stream no longer counts against the connection's stream limit, so a peer could stall, reset and repeat.
 * The ingress's HTTP exchanges keep theirs to be read ({@link OnReset#DRAIN}): an answer queued whole before the reset
 * still reaches the browser, and the ingress opens such a stream only for a browser request, one per connection.
 *
 * <p>All state is the connection's event loop's, which its stream channels share.
 */
public final class StalledStreams extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(StalledStreams.class);
    /** The fewest DATA frames a stalled stream may queue: the default 1 MiB window in frames of 64 bytes. */
    static final int MIN_QUEUED_FRAMES = 16_384;

    /** Streams whose relay waits for its peer, by identity ({@link Http2FrameStream} keeps Object's equals). */
    private final Map<Http2FrameStream, Stall> stalled = new HashMap<>();
    /** DATA frames a stalled stream may queue: its window at 64 bytes a frame, at least {@link #MIN_QUEUED_FRAMES}. */
    private final int maxQueuedFrames;

    /** @param streamWindow the connection's stream window in bytes, which bounds what a stalled stream queues */
    public StalledStreams(int streamWindow) {
        this.maxQueuedFrames = Math.max(MIN_QUEUED_FRAMES, streamWindow / 64);
    }

    /** What the peer's reset of a stalled stream does to the frames it queued. */
    public enum OnReset {
        /** Closed at once, its queued frames released: a relayed byte stream aborts, as TCP's does. */
        CLOSE,
        /**
         * The queued frames wait to be read, the reset after them. For a stream the receiver opened itself, one per
         * request it serves: what it can keep so is what it had queued, as if the stream were still open.
         */
        DRAIN
    }

    /** A stalled stream's channel and the DATA frames that reached it since it stalled (all still queued). */
    private static final class Stall {
        final Http2StreamChannel channel;
        /**
         * The latest marker's: a stream that changes hands while stalled (an exchange's becoming a relay's) keeps its
         * count.
         */
        OnReset onReset;
        int frames;

        Stall(Http2StreamChannel channel, OnReset onReset) {
            this.channel = channel;
            this.onReset = onReset;
        }
    }

    /**
     * Marks the stream of {@code channel} as stalled (nothing reads it: its relay waits for its peer, or it has none
     * yet) or reading again; a peer's reset while it is stalled closes it at once ({@link OnReset#CLOSE}). Does
     * nothing for a channel that is not a tunnel stream, or on a connection without this handler. Call on the stream's
     * event loop.
     */
    public static void mark(Channel channel, boolean isStalled) {
        mark(channel, isStalled, OnReset.CLOSE);
    }

    /**
     * As {@link #mark(Channel, boolean)}, with what a peer's reset while stalled does to the queued frames; marking a
     * stream already stalled sets that and keeps the count of the frames it queued.
     */
    public static void mark(Channel channel, boolean isStalled, OnReset onReset) {
        if (!(channel instanceof Http2StreamChannel stream) || stream.parent() == null) {
            return;
        }
        StalledStreams streams = stream.parent().pipeline().get(StalledStreams.class);
        if (streams == null) {
            return;
        }
        if (isStalled) {
            if (stream.isActive() && stream.stream().state() != Http2Stream.State.CLOSED) { // no more DATA then
                Stall stall = streams.stalled.get(stream.stream());
                if (stall == null) {
                    streams.stalled.put(stream.stream(), new Stall(stream, onReset));
                } else {
                    stall.onReset = onReset;
                }
            }
        } else {
            streams.stalled.remove(stream.stream());
        }
    }

    /**
     * {@code buf}'s readable bytes in a buffer of their own, if {@code buf} is a view of another buffer (a slice of
     * a decoder's cumulation); {@code buf} itself otherwise (a socket read owns its buffer already). Releases
     * {@code buf} when it copies. A buffer the leak detector tracks is a view too, so is copied again: only the
     * sampled ones in production, every one under the tests' paranoid detector.
     */
    static ByteBuf ownCopy(ByteBufAllocator alloc, ByteBuf buf) {
        if (buf.unwrap() == null) {
            return buf;
        }
        try {
            int length = buf.readableBytes();
            ByteBuf copy = alloc.directBuffer(length, length);
            copy.writeBytes(buf, buf.readerIndex(), length);
            return copy;
        } finally {
            buf.release();
        }
    }

    /** DATA frames a stalled stream may queue on this connection (for tests). */
    int maxQueuedFrames() {
        return maxQueuedFrames;
    }

    /** How many streams are marked stalled (for tests). */
    int stalledCount() {
        return stalled.size();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!stalled.isEmpty() && msg instanceof Http2ResetFrame reset) {
            Stall resetWhileStalled = stalled.remove(reset.stream());
            ctx.fireChannelRead(msg);
            if (resetWhileStalled != null && resetWhileStalled.onReset == OnReset.CLOSE) {
                resetWhileStalled.channel.close(); // releases the queued frames; the relay ends the other side
            }
            return;
        }
        Stall stall;
        if (stalled.isEmpty() || !(msg instanceof Http2DataFrame data)
                || (stall = stalled.get(data.stream())) == null) {
            ctx.fireChannelRead(msg);
            return;
        }
        Http2FrameStream stream = data.stream();
        if (++stall.frames > maxQueuedFrames) {
            data.release();
            stalled.remove(stream);
            log.info("stream {} reset: its peer sent more than {} DATA frames while it was not reading", stream.id(),
                    maxQueuedFrames);
            ctx.writeAndFlush(new DefaultHttp2ResetFrame(Http2Error.ENHANCE_YOUR_CALM).stream(stream));
            // A closed stream's channel stays open until its queued frames are read, which a stalled relay never
            // does: closed here, it releases them and its relay ends the other side.
            stall.channel.close();
            return;
        }
        if (data.content().unwrap() != null) {
            boolean end = data.isEndStream();
            int padding = data.padding();
            ByteBuf content = ownCopy(ctx.alloc(), data.content()); // releases the frame's content: the frame
            ctx.fireChannelRead(new DefaultHttp2DataFrame(content, end, padding).stream(stream));
            return;
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        // The codec reports every stream state change; a closed stream's mark goes with it.
        if (evt instanceof Http2FrameStreamEvent event && event.stream().state() == Http2Stream.State.CLOSED) {
            stalled.remove(event.stream());
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        stalled.clear();
        super.channelInactive(ctx);
    }
}
