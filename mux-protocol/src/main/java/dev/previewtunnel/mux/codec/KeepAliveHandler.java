package dev.previewtunnel.mux.codec;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.DefaultHttp2PingFrame;
import io.netty.handler.codec.http2.Http2PingFrame;

/**
 * Sends an HTTP/2 PING when {@link PeerSilenceWatchdog} (first in the pipeline) has heard nothing from the peer for
 * the keepalive interval. The answer is only something received: the watchdog, not this handler, decides that a
 * peer which stays silent is dead, so liveness is timed from what arrives whatever this side keeps sending.
 *
 * <p>Sits after the HTTP/2 codec, which answers the peer's PINGs itself; PING frames go no further than here.
 */
final class KeepAliveHandler extends ChannelDuplexHandler {

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt == PeerSilenceWatchdog.PING_NEEDED) {
            ctx.writeAndFlush(new DefaultHttp2PingFrame(System.nanoTime()));
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (msg instanceof Http2PingFrame) {
            return; // an ack of ours (its arrival is what counted) or the peer's, already acknowledged by the codec
        }
        super.channelRead(ctx, msg);
    }
}
