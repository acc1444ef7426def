package dev.previewtunnel.ingress.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.ScheduledFuture;

import java.util.concurrent.TimeUnit;

/**
 * Cuts a request body that drips: while a browser connection is inside a request body and the proxy is waiting to
 * read from it, every period of {@code timeout} must bring at least {@link #MIN_BYTES} (or the body's end). A
 * silent body and one byte every few seconds are both cut; a body the proxy itself stopped reading (the target is
 * slow: backpressure) is not, since no read is outstanding then. The browser gets a 408 page if no response has
 * started, and the connection closes, which resets the request's stream to the target.
 *
 * <p>Two handlers share the state: {@link #bytes()} before the HTTP codec (sees every read request and the raw
 * bytes) and {@link #messages()} after it (sees where bodies start and end, and whether a response started).
 * Both leave the pipeline when the connection becomes a raw relay (the codec is gone).
 */
final class RequestBodyDeadline {
    static final String BYTES = "body-deadline-bytes";
    static final String MESSAGES = "body-deadline";
    /** Bytes a body must bring per period to count as progressing: 1 KiB, far below any real upload. */
    static final int MIN_BYTES = 1024;

    private final long timeoutMillis;
    private boolean inBody;
    private boolean readOutstanding;
    private boolean responseStarted;
    private boolean requestNeedsAnswer;
    private long bytesThisPeriod;
    private ScheduledFuture<?> period;

    RequestBodyDeadline(java.time.Duration timeout) {
        this.timeoutMillis = timeout.toMillis();
    }

    ChannelDuplexHandler bytes() {
        return new ChannelDuplexHandler() {
            @Override
            public void read(ChannelHandlerContext ctx) {
                readOutstanding = true;
                ctx.read();
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                readOutstanding = false;
                if (msg instanceof ByteBuf b) {
                    bytesThisPeriod += b.readableBytes();
                }
                if (!inBody && ctx.pipeline().get(BrowserPipeline.HTTP_CODEC) == null) {
                    // A raw relay now (CONNECT, 101): bodies are over for this connection.
                    ctx.pipeline().remove(this);
                    if (ctx.pipeline().get(MESSAGES) != null) {
                        ctx.pipeline().remove(MESSAGES);
                    }
                }
                ctx.fireChannelRead(msg);
            }
        };
    }

    ChannelDuplexHandler messages() {
        return new ChannelDuplexHandler() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (msg instanceof HttpRequest) {
                    responseStarted = false;
                    requestNeedsAnswer = true;
                    if (!(msg instanceof LastHttpContent)) {
                        inBody = true;
                        bytesThisPeriod = 0;
                        schedule(ctx);
                    }
                }
                if (msg instanceof LastHttpContent && inBody) {
                    inBody = false;
                    cancel();
                }
                ctx.fireChannelRead(msg);
            }

            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                if (msg instanceof HttpResponse) {
                    responseStarted = true;
                }
                ctx.write(msg, promise);
            }

            @Override
            public void channelInactive(ChannelHandlerContext ctx) {
                inBody = false;
                cancel();
                ctx.fireChannelInactive();
            }
        };
    }

    private void schedule(ChannelHandlerContext ctx) {
        cancel();
        period = ctx.executor().schedule(() -> endOfPeriod(ctx), timeoutMillis, TimeUnit.MILLISECONDS);
    }

    private void cancel() {
        if (period != null) {
            period.cancel(false);
            period = null;
        }
    }

    private void endOfPeriod(ChannelHandlerContext ctx) {
        period = null;
        if (!inBody || !ctx.channel().isActive()) {
            return;
        }
        if (bytesThisPeriod >= MIN_BYTES || !readOutstanding) {
            bytesThisPeriod = 0; // progressing, or we are the ones not reading (backpressure): next period
            schedule(ctx);
            return;
        }
        inBody = false;
        if (responseStarted || !requestNeedsAnswer) {
            ctx.channel().close();
            return;
        }
        // Written from this handler's position: through the codec to the browser, past the proxy handler.
        FullHttpResponse page = Refusal.requestBodyTimeout().page(ctx.alloc(), false);
        page.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        ctx.writeAndFlush(page).addListener(ChannelFutureListener.CLOSE);
    }
}
