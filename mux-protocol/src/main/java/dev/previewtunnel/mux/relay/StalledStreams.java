package dev.previewtunnel.mux.relay;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameStream;
import io.netty.handler.codec.http2.Http2FrameStreamEvent;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.codec.http2.Http2StreamChannel;

import java.util.HashSet;
import java.util.Set;

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
 * RelayHandler} copies them only when its socket is backlogged). Not covered: frames that arrive before a relay is
 * linked (a gateway stream while its target is dialled), which wait briefly and uncopied.
 *
 * <p>All state is the connection's event loop's, which its stream channels share.
 */
public final class StalledStreams extends ChannelInboundHandlerAdapter {
    /** Streams whose relay waits for its peer; identity set ({@link Http2FrameStream} keeps Object's equals). */
    private final Set<Http2FrameStream> stalled = new HashSet<>();

    /**
     * Marks the stream of {@code channel} as stalled (its reader stopped asking for reads) or reading again. Does
     * nothing for a channel that is not a tunnel stream, or on a connection without this handler.
     */
    static void mark(Channel channel, boolean isStalled) {
        if (!(channel instanceof Http2StreamChannel stream) || stream.parent() == null) {
            return;
        }
        StalledStreams streams = stream.parent().pipeline().get(StalledStreams.class);
        if (streams == null) {
            return;
        }
        if (isStalled) {
            if (stream.stream().state() != Http2Stream.State.CLOSED) { // a closed stream gets no more DATA
                streams.stalled.add(stream.stream());
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

    /** How many streams are marked stalled (for tests). */
    int stalledCount() {
        return stalled.size();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!stalled.isEmpty() && msg instanceof Http2DataFrame data && data.content().unwrap() != null
                && stalled.contains(data.stream())) {
            Http2FrameStream stream = data.stream();
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
