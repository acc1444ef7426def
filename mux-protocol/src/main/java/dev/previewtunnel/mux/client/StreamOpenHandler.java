package dev.previewtunnel.mux.client;

import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Client side of a stream open: waits for the gateway's answer to CONNECT. On {@code :status 200} it removes
 * itself and completes the promise with the stream channel; otherwise it fails the promise with the typed
 * error and the stream ends. A gateway that does not answer in time fails the open with
 * {@link TunnelError#GATEWAY_TIMEOUT} (and the stream is reset) instead of hanging the browser.
 */
final class StreamOpenHandler extends ChannelInboundHandlerAdapter {
    private final Promise<io.netty.handler.codec.http2.Http2StreamChannel> promise;
    private final Duration timeout;
    private ScheduledFuture<?> timer;

    StreamOpenHandler(Promise<io.netty.handler.codec.http2.Http2StreamChannel> promise, Duration timeout) {
        this.promise = promise;
        this.timeout = timeout;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        timer = ctx.executor().schedule(() -> {
            if (promise.tryFailure(new TunnelStreamException(TunnelError.GATEWAY_TIMEOUT,
                    "no answer from the gateway within " + timeout.toMillis() + " ms"))) {
                ctx.close();
            }
        }, timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof Http2HeadersFrame headers) {
            timer.cancel(false);
            try {
                ConnectHeaders.checkAccepted(headers.headers());
                if (headers.isEndStream()) {
                    throw new TunnelStreamException(TunnelError.PROTOCOL_ERROR, "accepted stream ended at once");
                }
                ctx.pipeline().remove(this);
                promise.trySuccess((io.netty.handler.codec.http2.Http2StreamChannel) ctx.channel());
            } catch (TunnelStreamException e) {
                promise.tryFailure(e);
                ctx.close();
            }
            return;
        }
        if (msg instanceof Http2ResetFrame reset) {
            timer.cancel(false);
            promise.tryFailure(resetError(reset.errorCode()));
            ctx.close();
            return;
        }
        // Anything before the response headers is a protocol error.
        ReferenceCountUtil.release(msg);
        timer.cancel(false);
        promise.tryFailure(new TunnelStreamException(TunnelError.PROTOCOL_ERROR, "data before CONNECT response"));
        ctx.close();
    }

    static TunnelStreamException resetError(long code) {
        Http2Error error = Http2Error.valueOf(code);
        if (error == Http2Error.REFUSED_STREAM) {
            // Sent for streams past a GOAWAY or over the concurrency limit: never processed, safe to retry.
            return new TunnelStreamException(TunnelError.TOO_MANY_STREAMS, "stream refused by the gateway", true);
        }
        if (error == Http2Error.ENHANCE_YOUR_CALM) {
            return new TunnelStreamException(TunnelError.TOO_MANY_STREAMS, "gateway asked to slow down");
        }
        return new TunnelStreamException(TunnelError.STREAM_RESET,
                "reset before answer (" + (error == null ? code : error.name()) + ")");
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        timer.cancel(false);
        promise.tryFailure(new TunnelStreamException(TunnelError.STREAM_RESET,
                "tunnel connection closed before the gateway answered", true));
        super.channelInactive(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        FatalErrors.check(cause); // an Error means the process, not this connection, is broken
        timer.cancel(false);
        promise.tryFailure(cause instanceof TunnelStreamException ? cause
                : new TunnelStreamException(TunnelError.STREAM_RESET, cause.getClass().getSimpleName()));
        ctx.close();
    }
}
