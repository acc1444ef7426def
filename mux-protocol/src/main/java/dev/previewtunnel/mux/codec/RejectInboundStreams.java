package dev.previewtunnel.mux.codec;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

/** On the opening side (the ingress) the peer has no business opening streams: close any it tries. */
@ChannelHandler.Sharable
final class RejectInboundStreams extends ChannelInboundHandlerAdapter {
    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        ctx.channel().close();
    }
}
