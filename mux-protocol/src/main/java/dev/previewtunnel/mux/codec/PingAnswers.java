package dev.previewtunnel.mux.codec;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;

/**
 * Answers WebSocket PINGs with at most one PONG in flight per connection (RFC 6455 5.5.3 lets an endpoint answer
 * only the most recent ping). A peer that pings and never reads our PONGs therefore queues one PONG, not one per
 * ping: the attack of issue 16, item 1 (docs/security.md, "Hostile peers" 1). Pings that arrive while a PONG is
 * still unwritten are counted; past {@link #MAX_UNANSWERED} the peer is plainly not reading, and the caller closes
 * the connection. A keepalive peer pings every few seconds, so it never comes near the limit. Event loop only.
 */
final class PingAnswers {
    /** Pings received while our PONG to an earlier one was still unwritten. */
    static final int MAX_UNANSWERED = 1024;

    private boolean pongInFlight;
    private ByteBuf latest; // the newest unanswered ping's payload, answered when the PONG in flight is written
    private int unanswered;

    /**
     * Takes ownership of {@code payload}. Returns false when the peer has left too many pings unanswered: the
     * caller closes the connection.
     */
    boolean answer(ChannelHandlerContext ctx, ByteBuf payload) {
        if (!pongInFlight) {
            send(ctx, payload);
            return true;
        }
        if (latest != null) {
            latest.release();
        }
        latest = payload;
        return ++unanswered <= MAX_UNANSWERED;
    }

    private void send(ChannelHandlerContext ctx, ByteBuf payload) {
        pongInFlight = true;
        ctx.writeAndFlush(new PongWebSocketFrame(payload)).addListener((ChannelFutureListener) f -> {
            pongInFlight = false;
            if (!f.isSuccess()) {
                release();
                return;
            }
            unanswered = 0;
            ByteBuf next = latest;
            latest = null;
            if (next != null) {
                send(ctx, next);
            }
        });
    }

    /** Releases the payload still waiting; called when the connection ends. */
    void release() {
        if (latest != null) {
            latest.release();
            latest = null;
        }
    }
}
