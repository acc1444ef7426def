package dev.previewtunnel.gateway.security;

import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.OutputShutdown;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamChannelBootstrap;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * One gateway on 127.0.0.1:0 with a fresh key directory, an issuer for its environment, a client event loop and
 * helpers to open streams the way a well-behaved ingress does ({@link TunnelConnection#openStream}) or the way a
 * hostile one could (raw HEADERS on an {@link Http2StreamChannelBootstrap}). Everything is loopback.
 */
final class SecurityFixture implements AutoCloseable {
    static final String ENV = "env-a";
    static final Duration TIMEOUT = Duration.ofSeconds(10);

    final Path keysDir;
    final KeyDirectory keys;
    final GrantIssuer issuer;
    final String token;
    final Transports transports = Transports.best();
    final EventLoopGroup clientGroup;
    final GatewayConfig config;
    final GatewayServer gateway;

    private SecurityFixture(Path dir, String environment, KeyDirectory sharedKeys,
                            UnaryOperator<GatewayConfig> customize) throws Exception {
        this.keysDir = sharedKeys != null ? sharedKeys.dir() : dir.resolve("keys-" + environment);
        this.keys = sharedKeys != null ? sharedKeys : KeyDirectory.init(keysDir);
        this.issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        this.token = issuer.issueConnectionToken(environment, Duration.ofHours(1));
        this.config = customize.apply(GatewayConfig.defaults(environment, new InetSocketAddress("127.0.0.1", 0)));
        this.clientGroup = transports.newGroup(1, "sec-test-client-" + environment);
        GatewayServer started;
        try {
            started = GatewayServer.start(config, keys.verificationKeys(), null, new SimpleMeterRegistry());
        } catch (Exception | Error e) {
            clientGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e;
        }
        this.gateway = started;
    }

    static SecurityFixture start(Path dir, UnaryOperator<GatewayConfig> customize) throws Exception {
        return new SecurityFixture(dir, ENV, null, customize);
    }

    /** A second gateway for {@code environment} trusting the same keys (so its own grants verify there). */
    static SecurityFixture startSharingKeys(SecurityFixture keysOf, String environment,
                                            UnaryOperator<GatewayConfig> customize) throws Exception {
        return new SecurityFixture(null, environment, keysOf.keys, customize);
    }

    String environment() {
        return config.environment();
    }

    URI url() {
        return URI.create(gateway.url(false));
    }

    TunnelClient client() {
        return new TunnelClient(clientGroup, transports.socketChannel(), MuxSettings.defaults());
    }

    Future<TunnelConnection> connectAsync(String connectionToken) {
        return client().connect(url(), connectionToken, null, Duration.ofSeconds(5));
    }

    TunnelConnection connect() throws Exception {
        return connectAsync(token).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    String grant(String session, String host, int port) {
        return issuer.issueGrant(GrantSpec.tcp(environment(), session, host, port), Duration.ofMinutes(5));
    }

    static Http2StreamChannel open(TunnelConnection connection, Authority target, String grant) throws Exception {
        return connection.openStream(target, grant, Duration.ofSeconds(5)).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    /** Opens a stream that must be refused; returns the typed refusal. */
    static TunnelStreamException refusal(TunnelConnection connection, Authority target, String grant)
            throws Exception {
        Future<Http2StreamChannel> f = connection.openStream(target, grant, Duration.ofSeconds(5));
        try {
            Http2StreamChannel unexpected = f.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            unexpected.close();
            throw new AssertionError("stream to " + target + " was accepted; a refusal was expected");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TunnelStreamException t) {
                return t;
            }
            throw new AssertionError("unexpected failure opening " + target, e.getCause());
        }
    }

    /**
     * Sends {@code headers} as the first HEADERS frame of a new stream, as a hostile ingress could, and returns
     * the gateway's answer: its response headers, or the RST_STREAM error code as a {@link Long}.
     */
    static Object rawOpen(TunnelConnection connection, Http2Headers headers) throws Exception {
        CompletableFuture<Object> answer = new CompletableFuture<>();
        Http2StreamChannel stream = new Http2StreamChannelBootstrap(connection.channel())
                .handler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        try {
                            if (msg instanceof Http2HeadersFrame h) {
                                answer.complete(h.headers());
                            } else if (msg instanceof Http2ResetFrame r) {
                                answer.complete(r.errorCode());
                            }
                        } finally {
                            ReferenceCountUtil.release(msg);
                        }
                    }

                    @Override
                    public void channelInactive(ChannelHandlerContext ctx) {
                        answer.completeExceptionally(new IllegalStateException("stream closed without an answer"));
                    }
                })
                .open().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        try {
            stream.writeAndFlush(new DefaultHttp2HeadersFrame(headers, false));
            return answer.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        } finally {
            stream.close();
        }
    }

    /**
     * Sends {@code payload} on an accepted stream to a {@code RawEchoServer}, half-closes, and returns what came
     * back before END_STREAM (the echo server's byte count line).
     */
    static String exchange(Http2StreamChannel stream, byte[] payload) throws Exception {
        Collector collector = new Collector();
        stream.pipeline().addLast(collector);
        stream.read();
        stream.write(Unpooled.wrappedBuffer(payload));
        stream.writeAndFlush(OutputShutdown.INSTANCE);
        return new String(collector.done.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS), StandardCharsets.US_ASCII);
    }

    /** Collects what a stream delivers until END_STREAM. */
    static final class Collector extends ChannelInboundHandlerAdapter {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final CompletableFuture<byte[]> done = new CompletableFuture<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof ByteBuf buf) {
                byte[] copy = new byte[buf.readableBytes()];
                buf.readBytes(copy);
                synchronized (bytes) {
                    bytes.write(copy, 0, copy.length);
                }
            }
            ReferenceCountUtil.release(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.read();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                synchronized (bytes) {
                    done.complete(bytes.toByteArray());
                }
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            done.completeExceptionally(new IllegalStateException("stream closed before END_STREAM"));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
            ctx.close();
        }
    }

    @Override
    public void close() {
        try {
            gateway.close();
        } finally {
            clientGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** A plain HTTP/1.1 response read off a socket. */
    record RawResponse(int status, Map<String, String> headers, String body) {
        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    /**
     * Sends {@code request} (a complete HTTP/1.1 request head plus body) on a fresh socket and reads one response
     * (head, then Content-Length bytes or up to EOF). Bounded by a socket read timeout.
     */
    static RawResponse rawHttp(InetSocketAddress to, String request) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(to, 5000);
            socket.setSoTimeout((int) TIMEOUT.toMillis());
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = socket.getInputStream();
            String statusLine = readLine(in);
            if (statusLine == null) {
                throw new IOException("connection closed without a response");
            }
            String[] parts = statusLine.split(" ", 3);
            int status = Integer.parseInt(parts[1]);
            Map<String, String> headers = new LinkedHashMap<>();
            for (String line = readLine(in); line != null && !line.isEmpty(); line = readLine(in)) {
                int colon = line.indexOf(':');
                headers.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
            }
            String length = headers.get("content-length");
            byte[] body;
            if (length != null) {
                body = in.readNBytes(Integer.parseInt(length));
            } else if (status == 101) {
                body = new byte[0];
            } else {
                body = in.readAllBytes();
            }
            return new RawResponse(status, headers, new String(body, StandardCharsets.UTF_8));
        }
    }

    /** The tunnel upgrade request head, with an optional Authorization header. */
    static String upgradeRequest(InetSocketAddress gateway, String authorizationOrNull) {
        return "GET /tunnel HTTP/1.1\r\n"
                + "Host: 127.0.0.1:" + gateway.getPort() + "\r\n"
                + "Upgrade: websocket\r\n"
                + "Connection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                + "Sec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Protocol: ptun.v1\r\n"
                + (authorizationOrNull == null ? "" : "Authorization: " + authorizationOrNull + "\r\n")
                + "\r\n";
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0) {
            if (b == '\n') {
                String s = line.toString(StandardCharsets.ISO_8859_1);
                return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
            }
            line.write(b);
        }
        return line.size() == 0 ? null : line.toString(StandardCharsets.ISO_8859_1);
    }
}
