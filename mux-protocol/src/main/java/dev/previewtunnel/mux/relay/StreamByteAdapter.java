package dev.previewtunnel.mux.relay;

import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2ResetFrame;

/**
 * Makes an HTTP/2 stream channel look like a TCP socket to the handlers above it: DATA payloads become
 * {@link ByteBuf}s, {@code END_STREAM} becomes {@link ChannelInputShutdownEvent}, {@code RST_STREAM} becomes an
 * exception; outbound, bytes become DATA frames and {@link OutputShutdown} becomes {@code END_STREAM}.
 *
 * <p>The window is returned to the peer by Netty when a DATA frame is read through the child pipeline, so a
 * handler that stops calling {@code read()} stops the peer once the stream window is used up: that is the
 * per-stream backpressure.
 */
public final class StreamByteAdapter extends ChannelDuplexHandler {
    private boolean inputShutdown;

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof Http2DataFrame data) {
            boolean end = data.isEndStream();
            ByteBuf content = data.content();
            if (content.isReadable()) {
                ctx.fireChannelRead(content);
            } else {
                data.release();
                if (!end) {
                    // Nothing reached the handler above, so it will not ask for more: ask on its behalf.
                    ctx.read();
                }
            }
            if (end) {
                fireInputShutdown(ctx);
            }
        } else if (msg instanceof Http2ResetFrame reset) {
            ctx.fireExceptionCaught(new TunnelStreamException(TunnelError.STREAM_RESET,
                    "reset by peer (" + reset.errorCode() + ")"));
            ctx.close();
        } else if (msg instanceof Http2HeadersFrame headers) {
            // Trailers carry no meaning for a byte stream; only their END_STREAM does.
            if (headers.isEndStream()) {
                fireInputShutdown(ctx);
            } else {
                ctx.read();
            }
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    private void fireInputShutdown(ChannelHandlerContext ctx) {
        if (!inputShutdown) {
            inputShutdown = true;
            ctx.fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            ctx.fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
        }
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof ByteBuf buf) {
            ctx.write(new DefaultHttp2DataFrame(buf, false), promise);
        } else if (msg instanceof OutputShutdown) {
            ctx.write(new DefaultHttp2DataFrame(Unpooled.EMPTY_BUFFER, true), promise);
        } else {
            ctx.write(msg, promise);
        }
    }
}
