package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.wire.MuxProtocol;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2HeadersFrame;

/**
 * The first handler of every inbound stream; only observes, every message passes on unchanged. It meters (DATA
 * bytes each way, the time from the CONNECT HEADERS to the answer HEADERS, the time the stream spends unwritable)
 * and counts the stream's frames either way for its connection's {@link IdleStreams} sweep. One handler for both,
 * rather than a meter and an idle timer per stream: a stream open builds one handler and no timer
 * (docs/performance.md, finding 54).
 */
final class StreamWatch extends ChannelDuplexHandler {
    private final GatewayMetrics metrics;
    private final IdleStreams idle;
    private Channel stream;
    private long openStart;
    private boolean answered;
    private long stallStart;
    /** Frames read or written so far; the idle sweep compares it with what it saw last. Stream's loop only. */
    long activity;
    /** The sweep's own bookkeeping: the activity it saw last, and since when (its loop's ticker) it has not moved. */
    long activitySeen;
    long quietSince;

    StreamWatch(GatewayMetrics metrics, IdleStreams idle) {
        this.metrics = metrics;
        this.idle = idle;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        stream = ctx.channel();
    }

    /** Closes the stream for being idle ({@link IdleStreams}). */
    void closeStream() {
        StreamEnding.closeFor(stream, StreamEnding.IDLE);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        activity++;
        if (msg instanceof Http2DataFrame data) {
            metrics.bytesToTarget(data.content().readableBytes());
        } else if (msg instanceof Http2HeadersFrame && openStart == 0) {
            openStart = System.nanoTime();
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        activity++;
        if (msg instanceof Http2DataFrame data) {
            metrics.bytesFromTarget(data.content().readableBytes());
        } else if (msg instanceof Http2HeadersFrame headers && openStart != 0 && !answered) {
            answered = true;
            metrics.openAnswered(headers.headers().get(MuxProtocol.ERROR_HEADER), System.nanoTime() - openStart);
        }
        ctx.write(msg, promise);
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (!ctx.channel().isWritable()) {
            if (stallStart == 0) {
                stallStart = System.nanoTime();
                metrics.stallStarted();
            }
        } else {
            endStall();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        endStall();
        idle.unwatch(this);
        ctx.fireChannelInactive();
    }

    private void endStall() {
        if (stallStart != 0) {
            metrics.stallEnded(System.nanoTime() - stallStart);
            stallStart = 0;
        }
    }
}
