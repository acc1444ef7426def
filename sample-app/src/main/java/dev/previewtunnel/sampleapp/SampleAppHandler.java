package dev.previewtunnel.sampleapp;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import io.netty.util.ReferenceCountUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.function.Function;

/**
 * Per-connection HTTP/1.1 request dispatch to the route classes ({@link PageRoutes}, {@link PatternBodyRoutes},
 * {@link CookieRoutes}, {@link EchoHeadersRoute}, {@link UploadDigest}). Receives the un-aggregated
 * {@link HttpRequest} / {@link HttpContent} stream from {@link io.netty.handler.codec.http.HttpServerCodec};
 * request bodies are discarded except for {@code POST /upload}'s, which goes to its {@link UploadDigest}.
 */
final class SampleAppHandler extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(SampleAppHandler.class);

    /** Counts a response (or WebSocket handshake) as served: {@link SampleApp}'s counter. */
    private final Runnable served;
    /** The gates of {@code /gated-bytes} by name; null for none. */
    private final Function<String, ResponseGate> gates;
    /** Non-null while the body of a POST /upload is being received. */
    private UploadDigest upload;

    SampleAppHandler(Runnable served, Function<String, ResponseGate> gates) {
        this.served = served;
        this.gates = gates;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof HttpObject)) {
            // WebSocket frames after the upgrade: not ours.
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            if (msg instanceof HttpRequest) {
                HttpRequest req = (HttpRequest) msg;
                upload = null;
                if (req.decoderResult().isFailure()) {
                    reply(ctx, false).badRequest("bad request: " + req.decoderResult().cause() + "\n");
                    return;
                }
                handleRequest(ctx, req);
            }
            if (msg instanceof HttpContent) {
                HttpContent content = (HttpContent) msg;
                if (content.decoderResult().isFailure()) {
                    upload = null;
                    reply(ctx, false).badRequest("bad request body\n");
                    return;
                }
                UploadDigest u = upload;
                if (u != null) {
                    u.update(content.content());
                    if (content instanceof LastHttpContent) {
                        upload = null;
                        u.finish();
                    }
                }
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    private Reply reply(ChannelHandlerContext ctx, boolean keepAlive) {
        return new Reply(ctx, served, keepAlive);
    }

    private void handleRequest(ChannelHandlerContext ctx, HttpRequest req) {
        Reply reply = reply(ctx, HttpUtil.isKeepAlive(req));
        QueryStringDecoder query = new QueryStringDecoder(req.uri());
        HttpMethod method = req.method();
        boolean get = HttpMethod.GET.equals(method) || HttpMethod.HEAD.equals(method);
        boolean head = HttpMethod.HEAD.equals(method);

        switch (query.path()) {
            case "/":
                if (requireGet(reply, get)) {
                    PageRoutes.index(reply);
                }
                return;
            case "/hello":
                if (requireGet(reply, get)) {
                    PageRoutes.hello(reply);
                }
                return;
            case "/stream":
                if (requireGet(reply, get)) {
                    PatternBodyRoutes.stream(reply, req, query, head);
                }
                return;
            case "/bytes":
                if (requireGet(reply, get)) {
                    PatternBodyRoutes.bytes(reply, query, head);
                }
                return;
            case "/upload":
                if (HttpMethod.POST.equals(method)) {
                    upload = new UploadDigest(reply);
                } else {
                    reply.methodNotAllowed("POST");
                }
                return;
            case "/cookie/set":
                if (requireGet(reply, get)) {
                    CookieRoutes.set(reply, query);
                }
                return;
            case "/cookie/get":
                if (requireGet(reply, get)) {
                    CookieRoutes.get(reply, req);
                }
                return;
            case "/redirect":
                if (requireGet(reply, get)) {
                    CookieRoutes.redirect(reply, query);
                }
                return;
            case "/login":
                if (requireGet(reply, get)) {
                    CookieRoutes.login(reply, req, query, false);
                }
                return;
            case "/login/absolute":
                if (requireGet(reply, get)) {
                    CookieRoutes.login(reply, req, query, true);
                }
                return;
            case "/echo-headers":
                EchoHeadersRoute.echo(reply, req);
                return;
            case "/gated-bytes":
                if (requireGet(reply, get)) {
                    PatternBodyRoutes.gatedBytes(reply, query, head, gates);
                }
                return;
            default:
                reply.text(HttpResponseStatus.NOT_FOUND, "not found\n");
        }
    }

    private static boolean requireGet(Reply reply, boolean get) {
        if (!get) {
            reply.methodNotAllowed("GET, HEAD");
        }
        return get;
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof WebSocketServerProtocolHandler.HandshakeComplete) {
            served.run();
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        upload = null;
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("closing {} after error", ctx.channel(), cause);
        ctx.close();
    }
}
