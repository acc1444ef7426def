package dev.previewtunnel.gateway;

import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;

import java.util.concurrent.TimeUnit;

/**
 * Resets a stream that moved no bytes either way for the configured idle time (its target closes too). One handler
 * that is the idle timer too, not an {@link IdleStateHandler} followed by a handler for its event: one handler
 * context fewer to build and pass through per stream open (docs/performance.md, finding 1).
 */
final class IdleStreamCloser extends IdleStateHandler {
    IdleStreamCloser(long idleMillis) {
        super(0, 0, idleMillis, TimeUnit.MILLISECONDS);
    }

    @Override
    protected void channelIdle(ChannelHandlerContext ctx, IdleStateEvent evt) {
        StreamEnding.closeFor(ctx.channel(), StreamEnding.IDLE);
    }
}
