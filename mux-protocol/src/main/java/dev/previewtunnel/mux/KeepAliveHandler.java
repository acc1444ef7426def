package dev.previewtunnel.mux;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.DefaultHttp2PingFrame;
import io.netty.handler.codec.http2.Http2PingFrame;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.concurrent.ScheduledFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Sends an HTTP/2 PING when the connection has been idle and closes it when the PING is not acknowledged in
 * time. A relay or NAT that silently dropped the connection is detected within interval + timeout, and the
 * streams on it end promptly instead of hanging.
 *
 * <p>Sits after the HTTP/2 codec; an {@link io.netty.handler.timeout.IdleStateHandler} before it raises the
 * idle events.
 */
public final class KeepAliveHandler extends ChannelDuplexHandler {
    private static final Logger log = LoggerFactory.getLogger(KeepAliveHandler.class);

    private final Duration timeout;
    private long outstandingPing = -1;
    private ScheduledFuture<?> timeoutTask;

    public KeepAliveHandler(Duration timeout) {
        this.timeout = timeout;
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof IdleStateEvent) {
            if (outstandingPing < 0) {
                long nonce = System.nanoTime();
                outstandingPing = nonce;
                ctx.writeAndFlush(new DefaultHttp2PingFrame(nonce));
                timeoutTask = ctx.executor().schedule(() -> {
                    if (outstandingPing == nonce) {
                        log.warn("tunnel keepalive: no PING ack within {} ms, closing connection {}",
                                timeout.toMillis(), ctx.channel().remoteAddress());
                        ctx.close();
                    }
                }, timeout.toMillis(), TimeUnit.MILLISECONDS);
            }
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (msg instanceof Http2PingFrame ping && ping.ack()) {
            if (ping.content() == outstandingPing) {
                outstandingPing = -1;
                if (timeoutTask != null) {
                    timeoutTask.cancel(false);
                }
            }
            return;
        }
        if (msg instanceof Http2PingFrame) {
            return; // already acknowledged by the codec
        }
        super.channelRead(ctx, msg);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        if (timeoutTask != null) {
            timeoutTask.cancel(false);
        }
        super.channelInactive(ctx);
    }
}
