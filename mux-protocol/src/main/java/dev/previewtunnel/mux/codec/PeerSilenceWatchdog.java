package dev.previewtunnel.mux.codec;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.ScheduledFuture;
import io.netty.util.concurrent.Ticker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Liveness of a tunnel connection, timed from what the peer <em>sends</em>: after {@code pingAfter} without a
 * byte from the peer it asks {@link KeepAliveHandler} for a PING; after {@code deadAfter} without one it closes the
 * socket. What this side sends proves nothing (a frozen peer's kernel keeps accepting it), so requests sent into a
 * dead connection can no longer keep it looking alive.
 *
 * <p>Sits first in the pipeline (raw socket reads, below TLS and WebSocket): every byte received counts, even a
 * partial frame. Its close goes straight to the socket, past the HTTP/2 codec, whose graceful close would send
 * GOAWAY to a peer that cannot answer and wait for streams that cannot end: the streams end at once instead.
 */
public final class PeerSilenceWatchdog extends ChannelInboundHandlerAdapter {
    /** The user event that asks {@link KeepAliveHandler} to send a PING now. */
    public static final Object PING_NEEDED = new Object() {
        @Override
        public String toString() {
            return "PING_NEEDED";
        }
    };
    private static final Logger log = LoggerFactory.getLogger(PeerSilenceWatchdog.class);

    private final long pingAfterNanos;
    private final long deadAfterNanos;
    private long lastReadNanos;
    private boolean reading;
    private boolean pingAsked;
    private ScheduledFuture<?> check;
    /** The event loop's clock, as its timers use it (an embedded loop's is the one tests advance). */
    private Ticker ticker = Ticker.systemTicker();

    /**
     * @param pingInterval the silence after which a PING is sent; at most three quarters of {@code timeout}, so a
     *                     healthy peer always has a quarter of the timeout to answer
     * @param timeout      the longest silence a live peer can show: the connection is closed after it
     */
    public PeerSilenceWatchdog(Duration pingInterval, Duration timeout) {
        this.deadAfterNanos = timeout.toNanos();
        this.pingAfterNanos = pingAfter(pingInterval, timeout).toNanos();
    }

    /** The silence after which a PING goes out (see the constructor). */
    public static Duration pingAfter(Duration pingInterval, Duration timeout) {
        return Duration.ofNanos(Math.min(pingInterval.toNanos(), timeout.toNanos() / 4 * 3));
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        ticker = ctx.executor().ticker();
        lastReadNanos = ticker.nanoTime();
        if (ctx.channel().isActive()) {
            schedule(ctx, pingAfterNanos);
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        if (check == null) {
            lastReadNanos = ticker.nanoTime();
            schedule(ctx, pingAfterNanos);
        }
        super.channelActive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        reading = true;
        ctx.fireChannelRead(msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (reading) {
            reading = false;
            lastReadNanos = ticker.nanoTime();
            if (pingAsked) {
                // The check waits for the timeout after a PING; the peer answered: the next silence is timed anew.
                pingAsked = false;
                cancel();
                schedule(ctx, pingAfterNanos);
            }
        }
        ctx.fireChannelReadComplete();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        cancel();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        cancel();
        super.channelInactive(ctx);
    }

    private void cancel() {
        if (check != null) {
            check.cancel(false);
        }
    }

    private void schedule(ChannelHandlerContext ctx, long delayNanos) {
        check = ctx.executor().schedule(() -> check(ctx), Math.max(delayNanos, 1_000_000L), TimeUnit.NANOSECONDS);
    }

    private void check(ChannelHandlerContext ctx) {
        if (!ctx.channel().isActive()) {
            return;
        }
        long silent = reading ? 0 : ticker.nanoTime() - lastReadNanos;
        if (silent >= deadAfterNanos) {
            log.warn("tunnel keepalive: nothing received from {} for {} ms, closing the connection",
                    ctx.channel().remoteAddress(), TimeUnit.NANOSECONDS.toMillis(silent));
            ctx.close();
            return;
        }
        if (silent >= pingAfterNanos && !pingAsked) {
            pingAsked = true;
            ctx.fireUserEventTriggered(PING_NEEDED);
        }
        schedule(ctx, (pingAsked ? deadAfterNanos : pingAfterNanos) - silent);
    }
}
