package dev.previewtunnel.sampleapp;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.ContinuationWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import io.netty.util.ReferenceCountUtil;

/**
 * Echoes text, binary and continuation frames back unchanged (so fragmentation is preserved).
 * Close and ping are handled by {@link io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler}.
 * Reading pauses while the channel is not writable, so a client that sends but never reads cannot make the
 * server buffer unboundedly.
 */
final class WebSocketEchoHandler extends ChannelInboundHandlerAdapter {
    /** Set once the upgrade completed; before that the connection is plain HTTP and reads are never paused. */
    private boolean upgraded;

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof WebSocketServerProtocolHandler.HandshakeComplete) {
            upgraded = true;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof TextWebSocketFrame || msg instanceof BinaryWebSocketFrame
                || msg instanceof ContinuationWebSocketFrame) {
            // Ownership of the frame passes to the write; the encoder releases it.
            ctx.write(msg);
        } else {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        ctx.flush();
        if (upgraded && !ctx.channel().isWritable()) {
            ctx.channel().config().setAutoRead(false);
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (upgraded && ctx.channel().isWritable()) {
            ctx.channel().config().setAutoRead(true);
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }
}
