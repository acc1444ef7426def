package dev.previewtunnel.gateway.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.gateway.GatewayServer;
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
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.timeout.ReadTimeoutHandler;
import io.netty.util.NetUtil;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * The gateway's admin endpoint: HTTP+JSON on a loopback address, authenticated by its own bearer token, which
 * is kept in an owner-only file (never printed). Revoking a grant or a session refuses it from then on and
 * resets its live streams at once.
 *
 * <pre>
 *   POST /v1/revoke   {"grant":"JTI"} or {"session":"SESSION"}  -> {"revoked":"grant","id":...,"closedStreams":N}
 *   GET  /v1/status                                             -> {"env":...,"connections":N,"liveStreams":N}
 * </pre>
 *
 * Requests carrying an {@code Origin} header (a web page) or a non-loopback {@code Host} (DNS rebinding) are
 * refused before the token is even looked at.
 */
public final class AdminServer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Channel channel;
    private final byte[] token;
    private final Path tokenFile;

    private AdminServer(Channel channel, byte[] token, Path tokenFile) {
        this.channel = channel;
        this.token = token;
        this.tokenFile = tokenFile;
    }

    /**
     * Starts the admin endpoint on {@code listen} (must be loopback) and writes a fresh token to
     * {@code tokenFile} with owner-only permissions.
     */
    public static AdminServer start(GatewayServer gateway, String environment, InetSocketAddress listen,
                                    Path tokenFile, EventLoopGroup group,
                                    Class<? extends ServerSocketChannel> channelType)
            throws IOException, InterruptedException {
        if (!listen.getAddress().isLoopbackAddress()) {
            throw new IllegalArgumentException("the admin endpoint must listen on a loopback address");
        }
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        String tokenText = Base64.getUrlEncoder().withoutPadding().encodeToString(secret);
        writeOwnerOnly(tokenFile, tokenText + "\n");
        byte[] tokenBytes = tokenText.getBytes(StandardCharsets.US_ASCII);
        AdminServer[] self = new AdminServer[1];
        Channel ch = new ServerBootstrap().group(group).channel(channelType)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel c) {
                        c.pipeline().addLast(new ReadTimeoutHandler(10))
                                .addLast(new HttpServerCodec(4096, 8192, 8192))
                                .addLast(new HttpObjectAggregator(16 * 1024))
                                .addLast(new Handler(gateway, environment, tokenBytes));
                    }
                }).bind(listen).sync().channel();
        self[0] = new AdminServer(ch, tokenBytes, tokenFile);
        return self[0];
    }

    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    public String url() {
        return "http://" + NetUtil.toSocketAddressString(address());
    }

    public Path tokenFile() {
        return tokenFile;
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        try {
            Files.deleteIfExists(tokenFile);
        } catch (IOException ignored) {
            // best effort: the token is useless once the endpoint is gone
        }
    }

    static void writeOwnerOnly(Path file, String content) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, ".admin-token", ".tmp",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            Files.writeString(tmp, content);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final GatewayServer gateway;
        private final String environment;
        private final byte[] token;

        Handler(GatewayServer gateway, String environment, byte[] token) {
            this.gateway = gateway;
            this.environment = environment;
            this.token = token;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            if (!req.decoderResult().isSuccess()) {
                reply(ctx, req, HttpResponseStatus.BAD_REQUEST, error("bad_request", "malformed request"));
                return;
            }
            if (req.headers().contains(HttpHeaderNames.ORIGIN)) {
                reply(ctx, req, HttpResponseStatus.FORBIDDEN,
                        error("browser_requests_refused", "the admin endpoint does not serve web pages"));
                return;
            }
            if (!loopbackHost(req.headers().get(HttpHeaderNames.HOST))) {
                reply(ctx, req, HttpResponseStatus.FORBIDDEN, error("host_not_allowed", "Host must be loopback"));
                return;
            }
            if (!authorized(req.headers().get(HttpHeaderNames.AUTHORIZATION))) {
                FullHttpResponse r = response(HttpResponseStatus.UNAUTHORIZED,
                        error("admin_token_refused", "admin token missing or wrong"));
                r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"preview-tunnel-admin\"");
                send(ctx, req, r);
                return;
            }
            String path = req.uri();
            if ("/v1/status".equals(path) && HttpMethod.GET.equals(req.method())) {
                ObjectNode body = JSON.createObjectNode()
                        .put("env", environment)
                        .put("connections", gateway.connectionCount())
                        .put("liveStreams", gateway.liveStreams().size());
                reply(ctx, req, HttpResponseStatus.OK, body);
            } else if ("/v1/revoke".equals(path) && HttpMethod.POST.equals(req.method())) {
                revoke(ctx, req);
            } else {
                reply(ctx, req, HttpResponseStatus.NOT_FOUND, error("not_found", "no such admin resource"));
            }
        }

        private void revoke(ChannelHandlerContext ctx, FullHttpRequest req) {
            JsonNode body;
            try {
                body = JSON.readTree(req.content().toString(StandardCharsets.UTF_8));
            } catch (IOException e) {
                reply(ctx, req, HttpResponseStatus.BAD_REQUEST, error("bad_json", "body is not JSON"));
                return;
            }
            String grant = text(body, "grant");
            String session = text(body, "session");
            if ((grant == null) == (session == null)) {
                reply(ctx, req, HttpResponseStatus.BAD_REQUEST,
                        error("bad_request", "give exactly one of \"grant\" (a grant id) or \"session\""));
                return;
            }
            int closed = grant != null ? gateway.revokeGrant(grant) : gateway.revokeSession(session);
            reply(ctx, req, HttpResponseStatus.OK, JSON.createObjectNode()
                    .put("revoked", grant != null ? "grant" : "session")
                    .put("id", grant != null ? grant : session)
                    .put("closedStreams", closed));
        }

        private static String text(JsonNode body, String field) {
            JsonNode n = body == null ? null : body.get(field);
            return n != null && n.isTextual() && !n.asText().isBlank() && n.asText().length() <= 256
                    ? n.asText() : null;
        }

        private boolean authorized(String header) {
            if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
                return false;
            }
            return MessageDigest.isEqual(token, header.substring(7).trim().getBytes(StandardCharsets.US_ASCII));
        }

        private static boolean loopbackHost(String host) {
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
            return addr != null && (addr.length == 4 ? addr[0] == 127 : isV6Loopback(addr));
        }

        private static boolean isV6Loopback(byte[] a) {
            for (int i = 0; i < 15; i++) {
                if (a[i] != 0) {
                    return false;
                }
            }
            return a[15] == 1;
        }

        private static ObjectNode error(String code, String message) {
            return JSON.createObjectNode().put("error", code).put("message", message);
        }

        private static FullHttpResponse response(HttpResponseStatus status, ObjectNode body) {
            FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                    Unpooled.copiedBuffer(body.toString() + "\n", StandardCharsets.UTF_8));
            r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json")
                    .set(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes())
                    .set(HttpHeaderNames.CACHE_CONTROL, "no-store");
            return r;
        }

        private static void reply(ChannelHandlerContext ctx, FullHttpRequest req, HttpResponseStatus status,
                                  ObjectNode body) {
            send(ctx, req, response(status, body));
        }

        private static void send(ChannelHandlerContext ctx, FullHttpRequest req, FullHttpResponse r) {
            boolean keepAlive = HttpUtil.isKeepAlive(req) && r.status().code() < 400;
            if (!keepAlive) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            }
            var f = ctx.writeAndFlush(r);
            if (!keepAlive) {
                f.addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
