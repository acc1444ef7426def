package dev.previewtunnel.sampleapp;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpChunkedInput;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import io.netty.util.ReferenceCountUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.zip.CRC32;

/**
 * Per-connection HTTP/1.1 request handler. Receives the un-aggregated {@link HttpRequest} / {@link HttpContent}
 * stream from {@link io.netty.handler.codec.http.HttpServerCodec}; request bodies are discarded except for
 * {@code POST /upload}, whose body is consumed chunk by chunk into a CRC32 and never buffered.
 */
final class SampleAppHandler extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(SampleAppHandler.class);
    static final ObjectMapper JSON = new ObjectMapper();

    static final int MAX_STREAM_CHUNKS = 10_000_000;
    static final int MAX_STREAM_CHUNK_SIZE = 8 * 1024 * 1024;
    static final int BYTES_CHUNK_SIZE = 64 * 1024;

    private static final String TEXT = "text/plain; charset=UTF-8";
    private static final String HTML = "text/html; charset=UTF-8";
    private static final String JSON_TYPE = "application/json";
    private static final String OCTETS = "application/octet-stream";

    static final String HELLO_BODY = "hello from the sample app\n";
    static final String INDEX_HTML = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <title>Preview tunnel sample app</title>
            </head>
            <body>
            <h1>Preview tunnel sample app</h1>
            <p id="marker">sample-app-ok</p>
            <form id="f"><input id="msg" value="hello over websocket" size="40"> <button>send</button></form>
            <p>WebSocket: <span id="state">connecting</span></p>
            <pre id="log"></pre>
            <script>
            (function () {
              var scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
              var ws = new WebSocket(scheme + location.host + '/ws');
              var state = document.getElementById('state');
              var log = document.getElementById('log');
              ws.onopen = function () { state.textContent = 'open'; ws.send('ping from the page'); };
              ws.onclose = function () { state.textContent = 'closed'; };
              ws.onerror = function () { state.textContent = 'error'; };
              ws.onmessage = function (e) { log.textContent += 'echo: ' + e.data + '\\n'; };
              document.getElementById('f').onsubmit = function (e) {
                e.preventDefault();
                if (ws.readyState === WebSocket.OPEN) { ws.send(document.getElementById('msg').value); }
              };
            })();
            </script>
            </body>
            </html>
            """;

    private final SampleApp app;
    /** Non-null while the body of a POST /upload is being received. */
    private Upload upload;

    private static final class Upload {
        final boolean keepAlive;
        final CRC32 crc = new CRC32();
        long bytes;

        Upload(boolean keepAlive) {
            this.keepAlive = keepAlive;
        }
    }

    SampleAppHandler(SampleApp app) {
        this.app = app;
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
                    respond(ctx, false, HttpResponseStatus.BAD_REQUEST, TEXT,
                            "bad request: " + req.decoderResult().cause() + "\n", null);
                    return;
                }
                handleRequest(ctx, req);
            }
            if (msg instanceof HttpContent) {
                HttpContent content = (HttpContent) msg;
                if (content.decoderResult().isFailure()) {
                    upload = null;
                    respond(ctx, false, HttpResponseStatus.BAD_REQUEST, TEXT, "bad request body\n", null);
                    return;
                }
                Upload u = upload;
                if (u != null) {
                    ByteBuf buf = content.content();
                    u.bytes += buf.readableBytes();
                    if (buf.isReadable()) {
                        for (ByteBuffer bb : buf.nioBuffers()) {
                            u.crc.update(bb);
                        }
                    }
                    if (content instanceof LastHttpContent) {
                        upload = null;
                        Map<String, Object> body = new LinkedHashMap<>();
                        body.put("bytes", u.bytes);
                        body.put("crc32", String.format("%08x", u.crc.getValue()));
                        respond(ctx, u.keepAlive, HttpResponseStatus.OK, JSON_TYPE, json(body), null);
                    }
                }
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    private void handleRequest(ChannelHandlerContext ctx, HttpRequest req) {
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        QueryStringDecoder query = new QueryStringDecoder(req.uri());
        String path = query.path();
        HttpMethod method = req.method();
        boolean get = HttpMethod.GET.equals(method) || HttpMethod.HEAD.equals(method);
        boolean head = HttpMethod.HEAD.equals(method);

        switch (path) {
            case "/":
                if (requireGet(ctx, keepAlive, get)) {
                    respond(ctx, keepAlive, HttpResponseStatus.OK, HTML, INDEX_HTML, null);
                }
                return;
            case "/hello":
                if (requireGet(ctx, keepAlive, get)) {
                    respond(ctx, keepAlive, HttpResponseStatus.OK, TEXT, HELLO_BODY, null);
                }
                return;
            case "/stream":
                if (requireGet(ctx, keepAlive, get)) {
                    stream(ctx, req, query, keepAlive, head);
                }
                return;
            case "/bytes":
                if (requireGet(ctx, keepAlive, get)) {
                    bytes(ctx, query, keepAlive, head);
                }
                return;
            case "/upload":
                if (HttpMethod.POST.equals(method)) {
                    upload = new Upload(keepAlive);
                } else {
                    methodNotAllowed(ctx, keepAlive, "POST");
                }
                return;
            case "/cookie/set":
                if (requireGet(ctx, keepAlive, get)) {
                    cookieSet(ctx, query, keepAlive);
                }
                return;
            case "/cookie/get":
                if (requireGet(ctx, keepAlive, get)) {
                    String cookies = String.join("; ", req.headers().getAll(HttpHeaderNames.COOKIE));
                    respond(ctx, keepAlive, HttpResponseStatus.OK, TEXT, cookies, null);
                }
                return;
            case "/redirect":
                if (requireGet(ctx, keepAlive, get)) {
                    redirect(ctx, query, keepAlive);
                }
                return;
            case "/login":
                if (requireGet(ctx, keepAlive, get)) {
                    login(ctx, req, query, keepAlive, false);
                }
                return;
            case "/login/absolute":
                if (requireGet(ctx, keepAlive, get)) {
                    login(ctx, req, query, keepAlive, true);
                }
                return;
            case "/echo-headers":
                echoHeaders(ctx, req, keepAlive);
                return;
            case "/gated-bytes":
                if (requireGet(ctx, keepAlive, get)) {
                    gatedBytes(ctx, query, keepAlive, head);
                }
                return;
            default:
                respond(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, TEXT, "not found\n", null);
        }
    }

    private boolean requireGet(ChannelHandlerContext ctx, boolean keepAlive, boolean get) {
        if (!get) {
            methodNotAllowed(ctx, keepAlive, "GET, HEAD");
        }
        return get;
    }

    private void methodNotAllowed(ChannelHandlerContext ctx, boolean keepAlive, String allow) {
        respond(ctx, keepAlive, HttpResponseStatus.METHOD_NOT_ALLOWED, TEXT, "method not allowed\n",
                r -> r.headers().set(HttpHeaderNames.ALLOW, allow));
    }

    private void stream(ChannelHandlerContext ctx, HttpRequest req, QueryStringDecoder query,
                        boolean keepAlive, boolean head) {
        long chunks;
        long size;
        try {
            chunks = longParam(query, "chunks", 10);
            size = longParam(query, "size", 1024);
        } catch (NumberFormatException e) {
            badRequest(ctx, keepAlive, "chunks and size must be integers\n");
            return;
        }
        if (chunks < 0 || chunks > MAX_STREAM_CHUNKS || size < 1 || size > MAX_STREAM_CHUNK_SIZE) {
            badRequest(ctx, keepAlive, "need 0 <= chunks <= " + MAX_STREAM_CHUNKS + " and 1 <= size <= "
                    + MAX_STREAM_CHUNK_SIZE + "\n");
            return;
        }
        HttpResponse response = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, OCTETS);
        if (req.protocolVersion().equals(HttpVersion.HTTP_1_0)) {
            // No chunked encoding in HTTP/1.0: delimit by closing the connection.
            keepAlive = false;
        } else {
            HttpUtil.setTransferEncodingChunked(response, true);
        }
        sendStreaming(ctx, response, new PatternChunkedInput(chunks * size, (int) size), keepAlive, head);
    }

    private void bytes(ChannelHandlerContext ctx, QueryStringDecoder query, boolean keepAlive, boolean head) {
        long n;
        try {
            n = longParam(query, "n", -1);
        } catch (NumberFormatException e) {
            n = -1;
        }
        if (n < 0) {
            badRequest(ctx, keepAlive, "need n >= 0\n");
            return;
        }
        HttpResponse response = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, OCTETS);
        HttpUtil.setContentLength(response, n);
        sendStreaming(ctx, response, new PatternChunkedInput(n, BYTES_CHUNK_SIZE), keepAlive, head);
    }

    /** {@code /bytes}, held until the named {@link ResponseGate} opens (503 if it times out first). */
    private void gatedBytes(ChannelHandlerContext ctx, QueryStringDecoder query, boolean keepAlive, boolean head) {
        ResponseGate gate = app.gate(firstParam(query, "gate")); // "" names no gate
        if (gate == null) {
            respond(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, TEXT, "no such gate\n", null);
            return;
        }
        gate.arrive(ctx, timeoutMessage -> {
            if (timeoutMessage != null) {
                respond(ctx, keepAlive, HttpResponseStatus.SERVICE_UNAVAILABLE, TEXT, timeoutMessage, null);
            } else if (ctx.channel().isActive()) {
                bytes(ctx, query, keepAlive, head);
            }
        });
    }

    /** Headers now, body pulled chunk by chunk by the ChunkedWriteHandler only while the channel is writable. */
    private void sendStreaming(ChannelHandlerContext ctx, HttpResponse response, PatternChunkedInput input,
                               boolean keepAlive, boolean head) {
        setConnection(response, keepAlive);
        app.requestServed();
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

    private void cookieSet(ChannelHandlerContext ctx, QueryStringDecoder query, boolean keepAlive) {
        Map<String, List<String>> params = query.parameters();
        if (params.isEmpty()) {
            badRequest(ctx, keepAlive, "usage: /cookie/set?name=value\n");
            return;
        }
        List<String> setCookies = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : params.entrySet()) {
            String name = e.getKey();
            if (!isToken(name)) {
                badRequest(ctx, keepAlive, "invalid cookie name\n");
                return;
            }
            for (String value : e.getValue()) {
                if (!isCookieValue(value)) {
                    badRequest(ctx, keepAlive, "invalid cookie value\n");
                    return;
                }
                setCookies.add(name + "=" + value + "; Path=/; HttpOnly; SameSite=Lax");
            }
        }
        respond(ctx, keepAlive, HttpResponseStatus.OK, TEXT, "cookie set\n",
                r -> r.headers().add(HttpHeaderNames.SET_COOKIE, setCookies));
    }

    private void redirect(ChannelHandlerContext ctx, QueryStringDecoder query, boolean keepAlive) {
        List<String> to = query.parameters().get("to");
        String location = to == null || to.isEmpty() ? "" : to.get(0);
        if (location.isEmpty() || location.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            badRequest(ctx, keepAlive, "usage: /redirect?to=/path\n");
            return;
        }
        respond(ctx, keepAlive, HttpResponseStatus.FOUND, TEXT, "",
                r -> r.headers().set(HttpHeaderNames.LOCATION, location));
    }

    /**
     * The usual login shape: the response that sets the session cookie is itself the redirect. {@code Location} is
     * {@code to} as given (relative), or for {@code /login/absolute} the same path made absolute with the request's
     * own {@code Host} (same authority), the way frameworks build "return to" URLs.
     */
    private void login(ChannelHandlerContext ctx, HttpRequest req, QueryStringDecoder query, boolean keepAlive,
                       boolean absolute) {
        String to = firstParam(query, "to");
        String session = firstParam(query, "session");
        String host = req.headers().get(HttpHeaderNames.HOST, "");
        boolean relativePath = to.startsWith("/") && !to.startsWith("//")
                && to.chars().noneMatch(c -> c <= 0x20 || c == 0x7f);
        if (!relativePath || session.isEmpty() || !isCookieValue(session)
                || (absolute && !host.matches("[A-Za-z0-9.\\[\\]:-]+"))) {
            badRequest(ctx, keepAlive, "usage: /login?to=/path&session=value (and a Host header)\n");
            return;
        }
        String location = absolute ? "http://" + host + to : to;
        respond(ctx, keepAlive, HttpResponseStatus.FOUND, TEXT, "", r -> {
            r.headers().set(HttpHeaderNames.LOCATION, location);
            r.headers().set(HttpHeaderNames.SET_COOKIE, "session=" + session + "; Path=/; HttpOnly; SameSite=Lax");
        });
    }

    private static String firstParam(QueryStringDecoder query, String name) {
        List<String> values = query.parameters().get(name);
        return values == null || values.isEmpty() ? "" : values.get(0);
    }

    private void echoHeaders(ChannelHandlerContext ctx, HttpRequest req, boolean keepAlive) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        List<List<String>> raw = new ArrayList<>();
        for (Map.Entry<String, String> h : req.headers()) {
            headers.computeIfAbsent(h.getKey().toLowerCase(Locale.ROOT), k -> new ArrayList<>()).add(h.getValue());
            raw.add(List.of(h.getKey(), h.getValue()));
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("method", req.method().name());
        body.put("uri", req.uri());
        body.put("protocolVersion", req.protocolVersion().text());
        body.put("headers", headers);
        body.put("rawHeaders", raw);
        respond(ctx, keepAlive, HttpResponseStatus.OK, JSON_TYPE, json(body), null);
    }

    private void badRequest(ChannelHandlerContext ctx, boolean keepAlive, String message) {
        respond(ctx, keepAlive, HttpResponseStatus.BAD_REQUEST, TEXT, message, null);
    }

    private interface Customizer {
        void apply(FullHttpResponse response);
    }

    private void respond(ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus status,
                         String contentType, String body, Customizer customizer) {
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        HttpUtil.setContentLength(response, response.content().readableBytes());
        if (customizer != null) {
            customizer.apply(response);
        }
        setConnection(response, keepAlive);
        app.requestServed();
        ChannelFuture f = ctx.writeAndFlush(response);
        if (!keepAlive) {
            f.addListener(ChannelFutureListener.CLOSE);
        }
    }

    private static void setConnection(HttpResponse response, boolean keepAlive) {
        // Responses are always HTTP/1.1, where keep-alive is the default; say "close" when we will close.
        if (!keepAlive) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
    }

    private static long longParam(QueryStringDecoder query, String name, long dflt) {
        List<String> values = query.parameters().get(name);
        if (values == null || values.isEmpty()) {
            return dflt;
        }
        return Long.parseLong(values.get(0).trim());
    }

    private static String json(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** RFC 9110 token. */
    static boolean isToken(String s) {
        if (s.isEmpty()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                    || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    /** RFC 6265 cookie-octet* (no quotes, commas, semicolons, backslashes, whitespace or controls). */
    static boolean isCookieValue(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x21 || c > 0x7e || c == '"' || c == ',' || c == ';' || c == '\\') {
                return false;
            }
        }
        return true;
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof WebSocketServerProtocolHandler.HandshakeComplete) {
            app.requestServed();
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
