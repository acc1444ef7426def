package dev.previewtunnel.sampleapp;

import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;

import java.util.function.Function;

/**
 * The large-body routes, all {@link Pattern} bytes streamed by {@link PatternChunkedInput}: {@code /stream}
 * (chunked), {@code /bytes} (with a Content-Length) and {@code /gated-bytes} ({@code /bytes} held by a gate).
 */
final class PatternBodyRoutes {
    static final int MAX_STREAM_CHUNKS = 10_000_000;
    static final int MAX_STREAM_CHUNK_SIZE = 8 * 1024 * 1024;
    static final int BYTES_CHUNK_SIZE = 64 * 1024;

    private PatternBodyRoutes() {
    }

    static void stream(Reply reply, HttpRequest req, QueryStringDecoder query, boolean head) {
        long chunks;
        long size;
        try {
            chunks = QueryParams.asLong(query, "chunks", 10);
            size = QueryParams.asLong(query, "size", 1024);
        } catch (NumberFormatException e) {
            reply.badRequest("chunks and size must be integers\n");
            return;
        }
        if (chunks < 0 || chunks > MAX_STREAM_CHUNKS || size < 1 || size > MAX_STREAM_CHUNK_SIZE) {
            reply.badRequest("need 0 <= chunks <= " + MAX_STREAM_CHUNKS + " and 1 <= size <= "
                    + MAX_STREAM_CHUNK_SIZE + "\n");
            return;
        }
        HttpResponse response = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, Reply.OCTETS);
        if (req.protocolVersion().equals(HttpVersion.HTTP_1_0)) {
            // No chunked encoding in HTTP/1.0: delimit by closing the connection.
            reply = reply.closing();
        } else {
            HttpUtil.setTransferEncodingChunked(response, true);
        }
        reply.streaming(response, new PatternChunkedInput(chunks * size, (int) size), head);
    }

    static void bytes(Reply reply, QueryStringDecoder query, boolean head) {
        long n;
        try {
            n = QueryParams.asLong(query, "n", -1);
        } catch (NumberFormatException e) {
            n = -1;
        }
        if (n < 0) {
            reply.badRequest("need n >= 0\n");
            return;
        }
        HttpResponse response = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, Reply.OCTETS);
        HttpUtil.setContentLength(response, n);
        reply.streaming(response, new PatternChunkedInput(n, BYTES_CHUNK_SIZE), head);
    }

    /** {@code /bytes}, held until the named {@link ResponseGate} opens (503 if it times out first). */
    static void gatedBytes(Reply reply, QueryStringDecoder query, boolean head,
                           Function<String, ResponseGate> gates) {
        ResponseGate gate = gates.apply(QueryParams.first(query, "gate")); // "" names no gate
        if (gate == null) {
            reply.text(HttpResponseStatus.NOT_FOUND, "no such gate\n");
            return;
        }
        gate.arrive(reply.ctx(), timeoutMessage -> {
            if (timeoutMessage != null) {
                reply.text(HttpResponseStatus.SERVICE_UNAVAILABLE, timeoutMessage);
            } else if (reply.ctx().channel().isActive()) {
                bytes(reply, query, head);
            }
        });
    }
}
