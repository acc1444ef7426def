package dev.previewtunnel.gateway;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.ScheduledFuture;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Closes a connection that has not completed the tunnel upgrade within a fixed time from accept. Unlike a
 * read timeout, a client dripping one byte at a time (slowloris) cannot extend it. Removed on upgrade.
 */
final class HandshakeDeadline extends ChannelInboundHandlerAdapter {
    static final String NAME = "handshake-deadline";
    private final Duration timeout;
    private ScheduledFuture<?> task;

    HandshakeDeadline(Duration timeout) {
        this.timeout = timeout;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        task = ctx.executor().schedule(() -> {
            ctx.channel().close();
        }, timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        if (task != null) {
            task.cancel(false);
        }
    }
}
