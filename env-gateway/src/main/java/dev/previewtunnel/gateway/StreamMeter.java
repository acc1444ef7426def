package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.wire.MuxProtocol;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2HeadersFrame;

/**
 * The first handler of every inbound stream; only observes, every message passes on unchanged. It meters what a
 * stream does: DATA bytes each way, the time from the CONNECT HEADERS to the answer HEADERS (tagged with the answer's
 * ptun-error code, or {@code ok}), and the time the stream spends unwritable.
 */
final class StreamMeter extends ChannelDuplexHandler {
    private final GatewayMetrics metrics;
    private long openStart;
    private boolean answered;
    private long stallStart;

    StreamMeter(GatewayMetrics metrics) {
        this.metrics = metrics;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof Http2DataFrame data) {
            metrics.bytesToTarget(data.content().readableBytes());
        } else if (msg instanceof Http2HeadersFrame && openStart == 0) {
            openStart = System.nanoTime();
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
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
        stallStart = metrics.stalls().writabilityChanged(stallStart, ctx.channel().isWritable());
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        stallStart = metrics.stalls().ended(stallStart);
        ctx.fireChannelInactive();
    }
}
