package dev.previewtunnel.sampleapp;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpChunkedInput;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;

import java.nio.charset.StandardCharsets;

/**
 * The response to one request: writes it, counts it as served and closes the connection after it unless the
 * request keeps the connection alive. Responses are always HTTP/1.1.
 */
final class Reply {
    static final ObjectMapper JSON = new ObjectMapper();

    static final String TEXT = "text/plain; charset=UTF-8";
    static final String HTML = "text/html; charset=UTF-8";
    static final String JSON_TYPE = "application/json";
    static final String OCTETS = "application/octet-stream";

    /** Changes a full response's headers before it is sent. */
    interface Customizer {
        void apply(FullHttpResponse response);
    }

    private final ChannelHandlerContext ctx;
    private final Runnable served;
    final boolean keepAlive;

    Reply(ChannelHandlerContext ctx, Runnable served, boolean keepAlive) {
        this.ctx = ctx;
        this.served = served;
        this.keepAlive = keepAlive;
    }

    /** The same reply, closing the connection after the response. */
    Reply closing() {
        return new Reply(ctx, served, false);
    }

    ChannelHandlerContext ctx() {
        return ctx;
    }

    void respond(HttpResponseStatus status, String contentType, String body, Customizer customizer) {
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        HttpUtil.setContentLength(response, response.content().readableBytes());
        if (customizer != null) {
            customizer.apply(response);
        }
        setConnection(response);
        served.run();
        ChannelFuture f = ctx.writeAndFlush(response);
        if (!keepAlive) {
            f.addListener(ChannelFutureListener.CLOSE);
        }
    }

    void text(HttpResponseStatus status, String body) {
        respond(status, TEXT, body, null);
    }

    void json(Object body) {
        respond(HttpResponseStatus.OK, JSON_TYPE, toJson(body), null);
    }

    void badRequest(String message) {
        text(HttpResponseStatus.BAD_REQUEST, message);
    }

    void methodNotAllowed(String allow) {
        respond(HttpResponseStatus.METHOD_NOT_ALLOWED, TEXT, "method not allowed\n",
                r -> r.headers().set(HttpHeaderNames.ALLOW, allow));
    }

    /** Headers now, body pulled chunk by chunk by the ChunkedWriteHandler only while the channel is writable. */
    void streaming(HttpResponse response, PatternChunkedInput input, boolean head) {
        setConnection(response);
        served.run();
        ctx.write(response);
        ChannelFuture done;
        if (head) {
            input.close();
            done = ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
        } else {
            done = ctx.writeAndFlush(new HttpChunkedInput(input));
        }
        if (!keepAlive) {
            done.addListener(ChannelFutureListener.CLOSE);
        }
    }

    private void setConnection(HttpResponse response) {
        // Responses are always HTTP/1.1, where keep-alive is the default; say "close" when we will close.
        if (!keepAlive) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
    }

    static String toJson(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
