package dev.previewtunnel.gateway;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.timeout.IdleStateEvent;

/** Resets a stream that moved no bytes either way for the configured idle time (its target closes too). */
@ChannelHandler.Sharable
final class IdleStreamCloser extends ChannelInboundHandlerAdapter {
    static final IdleStreamCloser INSTANCE = new IdleStreamCloser();

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof IdleStateEvent) {
            StreamEnding.closeFor(ctx.channel(), StreamEnding.IDLE);
            return;
        }
        super.userEventTriggered(ctx, evt);
    }
}
