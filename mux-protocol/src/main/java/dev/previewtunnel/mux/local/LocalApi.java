package dev.previewtunnel.mux.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.NetUtil;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * Loopback HTTP+JSON plumbing shared by the gateway's admin endpoint and the ingress's control API.
 *
 * <p>Every request is checked in this order before the handler sees it: well-formed HTTP; no {@code Origin}
 * header (a web page, not a local tool, is calling); a loopback {@code Host} (defeats DNS rebinding); the
 * bearer token, compared in constant time. Tokens are random 256-bit values kept in owner-only files by the
 * callers and never printed.
 */
public final class LocalApi {
    private static final ObjectMapper JSON = new ObjectMapper();

    private LocalApi() {
    }

    /** Answers one authenticated request; runs on an event loop, so it must not block. */
    @FunctionalInterface
    public interface Handler {
        Response handle(String method, String path, JsonNode body) throws ApiException;
    }

    public record Response(int status, JsonNode body) {
        public static Response ok(JsonNode body) {
            return new Response(200, body);
        }
    }

    /** A refusal with a machine-readable code; the message must be safe to show. */
    public static final class ApiException extends Exception {
        private final int status;
        private final String code;

        public ApiException(int status, String code, String message) {
            super(message, null, false, false);
            this.status = status;
            this.code = code;
        }
    }

    public static ObjectNode object() {
        return JSON.createObjectNode();
    }

    public static String newToken() {
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(secret);
    }

    /** A whole request must arrive within this time of accept or of the previous answer (slowloris bound). */
    public static final java.time.Duration REQUEST_DEADLINE = java.time.Duration.ofSeconds(10);

    /** Binds the API on a loopback address; refuses any other address. */
    public static Channel bind(EventLoopGroup group, Class<? extends ServerSocketChannel> type,
                               InetSocketAddress listen, String token, String realm, Handler handler)
            throws InterruptedException {
        return bind(group, type, listen, token, realm, handler, REQUEST_DEADLINE);
    }

    public static Channel bind(EventLoopGroup group, Class<? extends ServerSocketChannel> type,
                               InetSocketAddress listen, String token, String realm, Handler handler,
                               java.time.Duration requestDeadline)
            throws InterruptedException {
        if (!listen.getAddress().isLoopbackAddress()) {
            throw new IllegalArgumentException("a local API must listen on a loopback address");
        }
        byte[] tokenBytes = token.getBytes(StandardCharsets.US_ASCII);
        return new ServerBootstrap().group(group).channel(type)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel c) {
                        c.pipeline().addLast(new HttpServerCodec(4096, 8192, 8192))
                                .addLast(new HttpObjectAggregator(64 * 1024))
                                .addLast(new RequestHandler(tokenBytes, realm, handler, requestDeadline.toMillis()));
                    }
                }).bind(listen).sync().channel();
    }

    private static final class RequestHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final long deadlineMillis;
        private final byte[] token;
        private final String realm;
        private final Handler handler;
        private io.netty.util.concurrent.ScheduledFuture<?> deadline;

        RequestHandler(byte[] token, String realm, Handler handler, long deadlineMillis) {
            this.deadlineMillis = deadlineMillis;
            this.token = token;
            this.realm = realm;
            this.handler = handler;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) throws Exception {
            arm(ctx);
            super.channelActive(ctx);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            if (deadline != null) {
                deadline.cancel(false);
            }
            super.channelInactive(ctx);
        }

        private void arm(ChannelHandlerContext ctx) {
            if (deadline != null) {
                deadline.cancel(false);
            }
            deadline = ctx.executor().schedule(() -> {
                ctx.close();
            }, deadlineMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            arm(ctx);
            Response response;
            try {
                response = check(req);
            } catch (ApiException e) {
                response = new Response(e.status, object().put("error", e.code).put("message", e.getMessage()));
            }
            FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                    HttpResponseStatus.valueOf(response.status()),
                    Unpooled.copiedBuffer(response.body().toString() + "\n", StandardCharsets.UTF_8));
            r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json")
                    .set(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes())
                    .set(HttpHeaderNames.CACHE_CONTROL, "no-store");
            if (response.status() == 401) {
                r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"" + realm + "\"");
            }
            boolean keepAlive = HttpUtil.isKeepAlive(req) && response.status() < 400;
            if (!keepAlive) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
            } else {
                ctx.writeAndFlush(r);
            }
        }

        private Response check(FullHttpRequest req) throws ApiException {
            if (!req.decoderResult().isSuccess()) {
                throw new ApiException(400, "bad_request", "malformed request");
            }
            if (req.headers().contains(HttpHeaderNames.ORIGIN)) {
                throw new ApiException(403, "browser_requests_refused", "this endpoint does not serve web pages");
            }
            if (!loopbackHost(req.headers().get(HttpHeaderNames.HOST))) {
                throw new ApiException(403, "host_not_allowed", "Host must be a loopback name or address");
            }
            String auth = req.headers().get(HttpHeaderNames.AUTHORIZATION);
            if (auth == null || !auth.regionMatches(true, 0, "Bearer ", 0, 7) || !MessageDigest.isEqual(token,
                    auth.substring(7).trim().getBytes(StandardCharsets.US_ASCII))) {
                throw new ApiException(401, "token_refused", "API token missing or wrong");
            }
            JsonNode body = null;
            if (req.content().isReadable()) {
                try {
                    body = JSON.readTree(req.content().toString(StandardCharsets.UTF_8));
                } catch (IOException e) {
                    throw new ApiException(400, "bad_json", "body is not JSON");
                }
            }
            String path = new QueryStringDecoder(req.uri()).path();
            return handler.handle(req.method().name(), path, body);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            FatalErrors.check(cause); // an Error means the process, not this connection, is broken
            ctx.close();
        }
    }

    /** {@code localhost}, {@code 127.x.y.z} or {@code [::1]}, with or without a port. */
    public static boolean loopbackHost(String host) {
        if (host == null) {
            return false;
        }
        String h = host;
        if (h.startsWith("[")) {
            int close = h.indexOf(']');
            h = close > 0 ? h.substring(1, close) : h;
        } else if (h.indexOf(':') > 0 && h.indexOf(':') == h.lastIndexOf(':')) {
            h = h.substring(0, h.indexOf(':'));
        }
        if ("localhost".equalsIgnoreCase(h)) {
            return true;
        }
        byte[] addr = NetUtil.createByteArrayFromIpAddressString(h);
        if (addr == null) {
            return false;
        }
        if (addr.length == 4) {
            return addr[0] == 127;
        }
        for (int i = 0; i < 15; i++) {
            if (addr[i] != 0) {
                return false;
            }
        }
        return addr[15] == 1;
    }

    /** A small helper for handlers: a required, non-blank, bounded text field. */
    public static String text(JsonNode body, String field, boolean required) throws ApiException {
        JsonNode n = body == null ? null : body.get(field);
        if (n == null || n.isNull()) {
            if (required) {
                throw new ApiException(400, "bad_request", "missing \"" + field + "\"");
            }
            return null;
        }
        if (!n.isTextual() || n.asText().isBlank() || n.asText().length() > 16 * 1024) {
            throw new ApiException(400, "bad_request", "\"" + field + "\" must be a non-empty string");
        }
        return n.asText();
    }
}
