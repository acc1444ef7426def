package dev.previewtunnel.mux.server;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.mux.codec.MuxPipeline;
import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketServerHandshaker;
import io.netty.handler.codec.http.websocketx.WebSocketServerHandshakerFactory;

import java.nio.charset.StandardCharsets;

/**
 * Server side of the tunnel handshake: one HTTP/1.1 upgrade request, checked in this order: path, WebSocket
 * upgrade, protocol version (subprotocol), connection token. Every refusal is a small JSON body with an
 * {@code error} code and the connection is closed; nothing is dialed before the upgrade succeeds.
 *
 * <p>Expected pipeline before the upgrade: {@code HttpServerCodec, HttpObjectAggregator(small), this}. A
 * handshake timeout (slowloris) is the caller's, e.g. a {@code ReadTimeoutHandler} removed by
 * {@link Acceptor#upgraded}.
 */
public final class TunnelServerUpgradeHandler extends SimpleChannelInboundHandler<FullHttpRequest> {

    /** Verifies the connection token; returns what the accepted connection is authorised for. */
    public interface ConnectionAuthenticator {
        Object authenticate(String token) throws RefusedException;

        /**
         * As {@link #authenticate(String)}, knowing the connection (e.g. to count it until it closes); this is
         * the method the handler calls.
         */
        default Object authenticate(Channel channel, String token) throws RefusedException {
            return authenticate(token);
        }
    }

    /**
     * A refusal with a machine-readable code, answered 401 unless another status is given (429 for a limit); the
     * message must be safe to show the client.
     */
    public static final class RefusedException extends Exception {
        private final int status;
        private final String code;

        public RefusedException(String code, String message) {
            this(401, code, message);
        }

        public RefusedException(int status, String code, String message) {
            super(message, null, false, false);
            this.status = status;
            this.code = code;
        }

        public int status() {
            return status;
        }

        public String code() {
            return code;
        }
    }

    /** Builds the per-connection handlers once the WebSocket upgrade succeeded. */
    public interface Acceptor {
        /** Handler for each inbound stream (placed in the child channel pipeline). */
        ChannelHandler inboundStreamHandler(Channel parent, Object principal);

        /** Last handler of the parent pipeline, or null. */
        ChannelHandler connectionHandler(Channel parent, Object principal);

        /** Called after the tunnel protocol is installed. */
        default void upgraded(Channel parent, Object principal) {
        }
    }


    private final String path;
    private final MuxSettings settings;
    private final ConnectionAuthenticator authenticator;
    private final Acceptor acceptor;

    public TunnelServerUpgradeHandler(String path, MuxSettings settings, ConnectionAuthenticator authenticator,
                                      Acceptor acceptor) {
        this.path = path;
        this.settings = settings;
        this.authenticator = authenticator;
        this.acceptor = acceptor;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
        if (!request.decoderResult().isSuccess()) {
            refuse(ctx, HttpResponseStatus.BAD_REQUEST, "bad_request", "malformed HTTP request");
            return;
        }
        String requestPath = new QueryStringDecoder(request.uri()).path();
        if (!path.equals(requestPath)) {
            refuse(ctx, HttpResponseStatus.NOT_FOUND, "not_found", "no tunnel endpoint at this path");
            return;
        }
        if (!HttpMethod.GET.equals(request.method())
                || !request.headers().containsValue(HttpHeaderNames.UPGRADE, HttpHeaderValues.WEBSOCKET, true)) {
            refuse(ctx, HttpResponseStatus.UPGRADE_REQUIRED, "websocket_required",
                    "this endpoint only accepts a WebSocket upgrade carrying " + MuxProtocol.SUBPROTOCOL);
            return;
        }
        String offered = request.headers().get(HttpHeaderNames.SEC_WEBSOCKET_PROTOCOL, "");
        boolean speaksOurs = false;
        for (String p : offered.split(",")) {
            if (MuxProtocol.SUBPROTOCOL.equals(p.trim())) {
                speaksOurs = true;
            }
        }
        if (!speaksOurs) {
            String client = offered.isBlank() ? "none" : offered.replaceAll("[^A-Za-z0-9.,_ -]", "?");
            if (client.length() > 100) {
                client = client.substring(0, 100);
            }
            refuse(ctx, HttpResponseStatus.UPGRADE_REQUIRED, "protocol_version_mismatch",
                    "gateway speaks " + MuxProtocol.SUBPROTOCOL + ", client offered " + client
                            + "; upgrade the older side");
            return;
        }
        String authorization = request.headers().get(HttpHeaderNames.AUTHORIZATION);
        if (authorization == null || !authorization.regionMatches(true, 0, MuxProtocol.TOKEN_SCHEME, 0,
                MuxProtocol.TOKEN_SCHEME.length())) {
            refuse(ctx, HttpResponseStatus.UNAUTHORIZED, "token_missing", "connection token required");
            return;
        }
        Object principal;
        try {
            principal = authenticator.authenticate(ctx.channel(),
                    authorization.substring(MuxProtocol.TOKEN_SCHEME.length()).trim());
        } catch (RefusedException e) {
            refuse(ctx, HttpResponseStatus.valueOf(e.status()), e.code(), e.getMessage());
            return;
        }
        String scheme = ctx.pipeline().get("tls") != null ? "wss" : "ws";
        String host = request.headers().get(HttpHeaderNames.HOST, "localhost");
        WebSocketServerHandshaker handshaker = new WebSocketServerHandshakerFactory(
                scheme + "://" + host + path, MuxProtocol.SUBPROTOCOL, MuxPipeline.decoderConfig(settings, true))
                .newHandshaker(request);
        if (handshaker == null) {
            WebSocketServerHandshakerFactory.sendUnsupportedVersionResponse(ctx.channel());
            ctx.close();
            return;
        }
        Channel ch = ctx.channel();
        handshaker.handshake(ch, request).addListener(f -> {
            if (!f.isSuccess()) {
                ch.close();
                return;
            }
            ch.pipeline().remove(this);
            MuxPipeline.install(ch, true, settings, acceptor.inboundStreamHandler(ch, principal),
                    acceptor.connectionHandler(ch, principal));
            acceptor.upgraded(ch, principal);
        });
    }

    private static void refuse(ChannelHandlerContext ctx, HttpResponseStatus status, String code, String message) {
        ObjectNode body = JsonTrees.object().put("error", code).put("message", message);
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                Unpooled.copiedBuffer(JsonTrees.write(body) + "\n", StandardCharsets.UTF_8));
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
        response.headers().set(HttpHeaderNames.CONTENT_LENGTH, response.content().readableBytes());
        response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        FatalErrors.check(cause); // an Error means the process, not this connection, is broken
        ctx.close();
    }
}
