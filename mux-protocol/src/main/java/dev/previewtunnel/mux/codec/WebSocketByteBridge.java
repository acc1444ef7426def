package dev.previewtunnel.mux.codec;

import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.wire.MuxProtocol;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.CoalescingBufferQueue;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.ContinuationWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.ReferenceCountUtil;

import java.nio.channels.ClosedChannelException;

/**
 * Turns the WebSocket connection into a byte stream for the HTTP/2 codec above it.
 *
 * <p>Inbound, the payload of every binary (or continuation) frame is passed on as it arrives: HTTP/2 is a
 * byte stream, so WebSocket message boundaries carry no meaning and nothing is aggregated or copied.
 * Outbound, the buffers the HTTP/2 codec writes between two flushes are coalesced into as few binary messages
 * as the size limit allows, so a flush of many small frames costs one WebSocket header, not one per frame.
 *
 * <p>Text frames are a protocol violation (close 1003). Pings are answered, one PONG in flight at a time
 * ({@link PingAnswers}: a peer that never reads them is closed with 1008); a close frame is answered and the
 * connection closed. On the side whose decoder leaves protocol violations to this handler
 * ({@link MuxPipeline#decoderConfig}, the gateway), a malformed frame is answered with a close frame carrying the
 * decoder's status. Nothing is written after a close frame, and the connection then closes at once: the close is
 * issued from this handler, below the HTTP/2 codec, whose graceful shutdown would otherwise send GOAWAY (a data
 * frame) after the close frame and hold the connection open for its timeout.
 */
public final class WebSocketByteBridge extends ChannelDuplexHandler {
    private final int maxSentMessage;
    private final boolean answersViolations;
    private final boolean masks;
    private boolean contiguous;
    private CoalescingBufferQueue pending;
    private boolean closeSent;
    private final PingAnswers pings = new PingAnswers();

    /**
     * @param maxSentMessage    the largest binary message this side sends ({@link MuxProtocol#MAX_SENT_MESSAGE});
     *                          the size of messages it accepts is the WebSocket decoder's limit
     * @param answersViolations true when the WebSocket decoder is configured not to close on a protocol violation
     *                          (it then only throws) and this handler must answer it
     * @param masks             true on the client side, which must mask every payload byte: data messages are
     *                          then encoded here, masked while copied ({@link BinaryFrames}); the server
     *                          encodes its own into one buffer too when the connection runs over TLS
     */
    public WebSocketByteBridge(int maxSentMessage, boolean answersViolations, boolean masks) {
        this.maxSentMessage = maxSentMessage;
        this.answersViolations = answersViolations;
        this.masks = masks;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        pending = new CoalescingBufferQueue(ctx.channel(), 4, false);
        contiguous = ctx.pipeline().get(SslHandler.class) != null;
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        pings.release();
        pending.releaseAndFailAll(new ClosedChannelException());
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        pings.release();
        pending.releaseAndFailAll(new ClosedChannelException());
        super.channelInactive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (closeSent) {
            ReferenceCountUtil.release(msg); // input after our close frame is discarded
        } else if (msg instanceof BinaryWebSocketFrame || msg instanceof ContinuationWebSocketFrame) {
            // Ownership of the content moves on with the read; the frame itself holds no other resource.
            ctx.fireChannelRead(((WebSocketFrame) msg).content());
        } else if (msg instanceof PingWebSocketFrame ping) {
            if (!pings.answer(ctx, ping.content()) && !closeSent) {
                // The peer reads nothing: a close frame would queue behind its unread PONG, so close now.
                closeSent = true;
                ctx.writeAndFlush(new CloseWebSocketFrame(WebSocketCloseStatus.POLICY_VIOLATION,
                        "pings faster than pongs are read"));
                ctx.close();
            }
        } else if (msg instanceof PongWebSocketFrame pong) {
            pong.release();
        } else if (msg instanceof CloseWebSocketFrame close) {
            close.release();
            closeWebSocket(ctx, new CloseWebSocketFrame(WebSocketCloseStatus.NORMAL_CLOSURE));
        } else if (msg instanceof WebSocketFrame other) {
            other.release();
            closeWebSocket(ctx, new CloseWebSocketFrame(WebSocketCloseStatus.INVALID_MESSAGE_TYPE,
                    "tunnel carries binary messages only"));
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        FatalErrors.check(cause); // an Error means the process, not this connection, is broken
        if (answersViolations && cause instanceof CorruptedWebSocketFrameException violation) {
            String reason = violation.getMessage() == null ? violation.closeStatus().reasonText()
                    : violation.getMessage();
            // A close frame's payload is at most 125 bytes: 2 for the status, the rest for the (ASCII) reason.
            closeWebSocket(ctx, new CloseWebSocketFrame(violation.closeStatus(),
                    reason.length() > 120 ? reason.substring(0, 120) : reason));
            return; // answered: the peer learns why, the connection ends
        }
        ctx.fireExceptionCaught(cause);
    }

    /** Sends what was written before, then {@code frame}, then closes; nothing is sent after it. */
    private void closeWebSocket(ChannelHandlerContext ctx, CloseWebSocketFrame frame) {
        if (closeSent) {
            frame.release();
            return;
        }
        if (!pending.isEmpty()) {
            flush(ctx);
        }
        closeSent = true;
        ctx.writeAndFlush(frame).addListener((ChannelFutureListener) f -> ctx.close());
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (closeSent) {
            ReferenceCountUtil.release(msg);
            promise.tryFailure(new ClosedChannelException());
        } else if (msg instanceof ByteBuf buf) {
            pending.add(buf, promise);
        } else {
            ctx.write(msg, promise);
        }
    }

    /**
     * Sends what the codec already wrote before closing. A connection error (e.g. the RST_STREAM flood limit)
     * writes GOAWAY and closes once that write completes; when a second error follows in the same read, Netty
     * completes the second GOAWAY at once (one was already sent) and its close would otherwise overtake the first
     * GOAWAY still queued here, so the peer would see the connection end without the reason.
     */
    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
        try {
            if (!pending.isEmpty()) {
                flush(ctx);
            }
        } finally {
            ctx.close(promise);
        }
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        while (!pending.isEmpty()) {
            ChannelPromise messagePromise = ctx.newPromise();
            ByteBuf payload = pending.remove(ctx.alloc(), maxSentMessage, messagePromise);
            if (masks || contiguous) {
                ByteBuf frame;
                try {
                    // Encoded here: Netty's encoder passes a finished frame through untouched. The client masks;
                    // the server under TLS saves SslHandler a copy (BinaryFrames).
                    frame = masks ? BinaryFrames.masked(ctx.alloc(), payload)
                            : BinaryFrames.unmasked(ctx.alloc(), payload);
                } catch (RuntimeException | Error e) { // e.g. out of direct memory: payload already released
                    FatalErrors.check(e); // out of memory: the process ends (when the program installed FatalErrors)
                    // A lost piece would corrupt the HTTP/2 byte stream: fail everything and end the connection.
                    messagePromise.tryFailure(e);
                    pending.releaseAndFailAll(e);
                    ctx.close();
                    return;
                }
                ctx.write(frame, messagePromise);
            } else {
                // Plain TCP: the header and the coalesced payload go to the socket as a gathering write, no copy.
                ctx.write(new BinaryWebSocketFrame(payload), messagePromise);
            }
        }
        ctx.flush();
    }
}
