package dev.previewtunnel.bench;

import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.relay.RelayHandler;
import dev.previewtunnel.mux.relay.SocketHalfCloseHandler;
import dev.previewtunnel.mux.relay.StreamByteAdapter;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.server.TunnelServerUpgradeHandler;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.ConnectRequest;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.EventExecutor;

import java.io.File;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * The protocol's floor under figure 6's idle RSS (issue 21, {@link MemoryFloor}): {@code mux-protocol} alone, as a
 * pair of processes forwarding ports the way the Dev Tunnels peer does. {@link Env} accepts tunnel connections
 * (WebSocket upgrade, HTTP/2 inside it) and dials the stream's target; {@link Desk} holds one tunnel connection per
 * event loop and forwards one local port per target port. Nothing else of the programs: no grants (JJWT), no
 * logging backend, no metrics, no audit, no command line, no HTTP proxy. What the design itself needs is at least
 * this, so an idle figure below it is out of reach for the gateway and the ingress on this runtime.
 */
public final class MuxFloor {
    /** The environment variable that carries the connection token from the runner to both processes. */
    static final String TOKEN_ENV = "PTUN_FLOOR_TOKEN";
    private static final Transports TRANSPORTS = Transports.best();

    private MuxFloor() {
    }

    /** A fresh token for one pair: both sides get it from the runner through {@link #TOKEN_ENV}. */
    static String newToken() {
        byte[] b = new byte[24];
        new SecureRandom().nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    private static String token() {
        String token = System.getenv(TOKEN_ENV);
        if (token == null || token.isEmpty()) {
            throw new IllegalStateException(TOKEN_ENV + " is not set");
        }
        return token;
    }

    /**
     * Environment side. Arguments: {@code [--tls CERT KEY]} (wss://, a server context built as the gateway's
     * {@code serve --tls-cert --tls-key}: Netty's defaults, OpenSSL where tcnative loads), then the target ports it
     * may dial on 127.0.0.1 (no other). Ready line: its URL.
     */
    public static final class Env {
        private Env() {
        }

        public static void main(String[] args) throws Exception {
            boolean tlsGiven = args.length >= 3 && args[0].equals("--tls");
            SslContext tls = tlsGiven
                    ? SslContextBuilder.forServer(new File(args[1]), new File(args[2])).build() : null;
            Set<Integer> allowed = Arrays.stream(args, tlsGiven ? 3 : 0, args.length).map(Integer::valueOf)
                    .collect(Collectors.toSet());
            String token = token();
            MuxSettings settings = MuxSettings.defaults();
            EventLoopGroup group = TRANSPORTS.newGroup(2, "floor-env");
            TunnelServerUpgradeHandler.Acceptor acceptor = new TunnelServerUpgradeHandler.Acceptor() {
                @Override
                public ChannelHandler inboundStreamHandler(Channel parent, Object principal) {
                    return new ChannelInitializer<Http2StreamChannel>() {
                        @Override
                        protected void initChannel(Http2StreamChannel ch) {
                            ReadBuffers.relayReads(ch); // relayed to its target once dialed, as the gateway's
                            ch.pipeline().addLast(new DialTarget(allowed));
                        }
                    };
                }

                @Override
                public ChannelHandler connectionHandler(Channel parent, Object principal) {
                    return null;
                }
            };
            Channel server = new ServerBootstrap().group(group).channel(TRANSPORTS.serverSocketChannel())
                    .childOption(ChannelOption.RCVBUF_ALLOCATOR, ReadBuffers.allocator())
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            if (tls != null) {
                                ch.pipeline().addLast(tls.newHandler(ch.alloc()));
                            }
                            ch.pipeline().addLast(new HttpServerCodec(4096, 8192, 8192), new HttpObjectAggregator(8192),
                                    new TunnelServerUpgradeHandler(MuxProtocol.DEFAULT_PATH, settings, t -> {
                                        if (!token.equals(t)) {
                                            throw new TunnelServerUpgradeHandler.RefusedException("token_refused",
                                                    "connection token refused");
                                        }
                                        return "floor";
                                    }, acceptor));
                        }
                    }).bind("127.0.0.1", 0).sync().channel();
            int port = ((InetSocketAddress) server.localAddress()).getPort();
            String scheme = tls == null ? "ws" : "wss";
            System.out.println("{\"event\":\"ready\",\"url\":\"" + scheme + "://127.0.0.1:" + port
                    + MuxProtocol.DEFAULT_PATH + "\"}");
            server.closeFuture().sync();
        }
    }

    /**
     * One per stream, as the gateway's {@code StreamAuthorizer}: on the stream's HEADERS, reading stops, 127.0.0.1
     * is dialed at the requested port (only a port it was given), and the stream is answered and relayed. Anything
     * before the HEADERS, or a second HEADERS, resets the stream.
     */
    private static final class DialTarget extends ChannelInboundHandlerAdapter {
        private final Set<Integer> allowed;
        private boolean started;

        DialTarget(Set<Integer> allowed) {
            this.allowed = allowed;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (started || !(msg instanceof Http2HeadersFrame headers)) {
                ReferenceCountUtil.release(msg);
                ctx.close();
                return;
            }
            started = true;
            ctx.channel().config().setOption(ChannelOption.AUTO_READ, false);
            Http2StreamChannel stream = (Http2StreamChannel) ctx.channel();
            int port;
            try {
                port = ConnectRequest.parse(headers.headers()).authority().port();
            } catch (TunnelStreamException e) {
                refuse(stream, e.error(), e.detail());
                return;
            }
            if (!allowed.contains(port)) {
                refuse(stream, TunnelError.POLICY_REFUSED, "port_not_allowed");
                return;
            }
            new Bootstrap().group(stream.eventLoop()).channel(TRANSPORTS.socketChannel())
                    .option(ChannelOption.AUTO_READ, false)
                    .option(ChannelOption.ALLOW_HALF_CLOSURE, true)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                    .option(ChannelOption.RCVBUF_ALLOCATOR, ReadBuffers.relayAllocator())
                    .handler(SocketHalfCloseHandler.INSTANCE)
                    .connect(new InetSocketAddress("127.0.0.1", port)).addListener((ChannelFuture f) -> {
                        if (!f.isSuccess()) {
                            refuse(stream, TunnelError.TARGET_UNREACHABLE, "connect_failed");
                            return;
                        }
                        if (!stream.isActive()) {
                            f.channel().close(); // reset while we dialed
                            return;
                        }
                        stream.writeAndFlush(ConnectHeaders.accepted());
                        stream.pipeline().remove(this);
                        stream.pipeline().addLast(new StreamByteAdapter());
                        RelayHandler.link(stream, f.channel(), null);
                    });
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }

        /** Answers with the refusal and ends the stream; the desktop side prints the code (MuxFloorTest reads it). */
        private static void refuse(Http2StreamChannel stream, TunnelError error, String detail) {
            stream.writeAndFlush(ConnectHeaders.refused(error, detail));
        }
    }

    /**
     * Desktop side. Arguments: the environment side's URL, {@code [--ca CERT]} (for wss://: trust that certificate;
     * without it the JDK's default trust, as the ingress builds its context with and without {@code --gateway-ca}),
     * {@code [--proxy]}, {@code [--loops N]} (event loops, each with its own tunnel connection; default the
     * ingress's, {@code IngressConfig.DEFAULT_IO_THREADS}), then the target ports; forwards one local port per
     * target port. Ready line: the local ports, in the order of the target ports, and with {@code --proxy} also
     * {@code proxy}, a port that answers {@code CONNECT localhost:PORT} as the ingress does ({@link ConnectFront}).
     */
    public static final class Desk {
        private Desk() {
        }

        public static void main(String[] args) throws Exception {
            URI url = URI.create(args[0]);
            SslContextBuilder tlsClient = SslContextBuilder.forClient();
            int first = 1;
            if (args.length >= 3 && args[1].equals("--ca")) {
                tlsClient.trustManager(new File(args[2]));
                first = 3;
            }
            boolean proxy = args.length > first && args[first].equals("--proxy");
            if (proxy) {
                first++;
            }
            int loops = IngressConfig.DEFAULT_IO_THREADS;
            if (args.length > first + 1 && args[first].equals("--loops")) {
                loops = Integer.parseInt(args[first + 1]);
                first += 2;
            }
            SslContext tls = "wss".equalsIgnoreCase(url.getScheme()) ? tlsClient.build() : null;
            String token = token();
            MuxSettings settings = MuxSettings.defaults();
            EventLoopGroup group = TRANSPORTS.newGroup(loops, "floor-desk");
            TunnelClient client = new TunnelClient(group, TRANSPORTS.socketChannel(), settings);
            // One tunnel connection per loop: a relay's two sides share one event loop.
            Map<EventExecutor, TunnelConnection> byLoop = new HashMap<>();
            for (EventLoop loop : client.loops()) {
                byLoop.put(loop, client.connect(url, token, tls, Duration.ofSeconds(10), loop).get());
            }
            List<Integer> local = new ArrayList<>();
            for (int i = first; i < args.length; i++) {
                Authority target = new Authority("localhost", Integer.parseInt(args[i]));
                local.add(listen(group, ch -> {
                    ch.pipeline().addLast(SocketHalfCloseHandler.INSTANCE);
                    byLoop.get(ch.eventLoop()).openStream(target, "floor", Duration.ofSeconds(10)).addListener(f -> {
                        if (f.isSuccess() && ch.isActive()) {
                            RelayHandler.link(ch, (Channel) f.getNow(), null);
                            return;
                        }
                        if (f.isSuccess()) {
                            ((Channel) f.getNow()).close();
                        } else {
                            // No logging backend here: the refusal's code, for the test.
                            System.err.println("open refused: " + f.cause());
                        }
                        ch.close();
                    });
                }));
            }
            String proxyPort = "";
            if (proxy) {
                String authorization = ConnectFront.authorization(token);
                proxyPort = ",\"proxy\":" + listen(group, ch -> {
                    ch.pipeline().addLast(ConnectFront.CODEC, new HttpServerCodec(4096, 8192, 8192));
                    ch.pipeline().addLast(SocketHalfCloseHandler.INSTANCE,
                            new ConnectFront(byLoop.get(ch.eventLoop()), authorization));
                });
            }
            System.out.println("{\"event\":\"ready\",\"ports\":" + local + proxyPort + "}");
            Thread.sleep(Long.MAX_VALUE);
        }

        /**
         * A 127.0.0.1 listener whose sockets come up as a relay wants them (auto-read off, half-closure allowed, the
         * relay's read allocator), set up further by {@code init}; returns its port.
         */
        private static int listen(EventLoopGroup group, Consumer<SocketChannel> init) throws InterruptedException {
            Channel listener = new ServerBootstrap().group(group).channel(TRANSPORTS.serverSocketChannel())
                    .childOption(ChannelOption.AUTO_READ, false)
                    .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ReadBuffers.relayReads(ch);
                            init.accept(ch);
                        }
                    }).bind("127.0.0.1", 0).sync().channel();
            return ((InetSocketAddress) listener.localAddress()).getPort();
        }
    }

    /**
     * The least a forward proxy does before its stream carries bytes, so that the floor can be measured with the
     * {@code CONNECT} exchange the design puts in front of every stream (DESIGN.md, forward-proxy attribution) and
     * a port forward does not have (finding 52): Netty's HTTP codec decodes the head, the session credential is
     * compared, the stream opened to the requested authority, {@code 200 Connection established} written through the
     * codec once the stream is accepted, and the connection relayed raw. No gate beyond that, no stream record, no
     * audit line, no metrics. Bytes sent before the 200 are not carried (a client waits for it): the connection
     * is closed instead.
     */
    static final class ConnectFront extends ChannelInboundHandlerAdapter {
        static final String CODEC = "http";
        /** The floor's one user name; the token is its password. */
        static final String USER = "floor";
        private final TunnelConnection tunnel;
        private final byte[] authorization;
        private boolean started;

        ConnectFront(TunnelConnection tunnel, String authorization) {
            this.tunnel = tunnel;
            this.authorization = authorization.getBytes(StandardCharsets.UTF_8);
        }

        /** The {@code Proxy-Authorization} value a client of the floor sends ({@link Route#proxied} builds it). */
        static String authorization(String token) {
            return Route.basicAuthorization(USER, token);
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ctx.read();
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (started) {
                boolean early = !(msg instanceof LastHttpContent last) || last.content().isReadable();
                ReferenceCountUtil.release(msg);
                if (early) {
                    ctx.close(); // bytes before the 200: not carried by the floor
                }
                return;
            }
            if (!(msg instanceof HttpRequest req)) {
                ReferenceCountUtil.release(msg);
                return; // the rest of a refused request's body, or nothing: the answer is on its way
            }
            started = true;
            ReferenceCountUtil.release(msg);
            Channel browser = ctx.channel();
            if (!req.decoderResult().isSuccess() || !HttpMethod.CONNECT.equals(req.method())) {
                answer(browser, HttpResponseStatus.BAD_REQUEST);
                return;
            }
            // Constant time, as the ingress compares its session passwords.
            byte[] given = String.valueOf(req.headers().get(HttpHeaderNames.PROXY_AUTHORIZATION))
                    .getBytes(StandardCharsets.UTF_8);
            if (!MessageDigest.isEqual(given, authorization)) {
                answer(browser, HttpResponseStatus.PROXY_AUTHENTICATION_REQUIRED);
                return;
            }
            Authority target;
            try {
                target = Authority.parse(req.uri());
            } catch (IllegalArgumentException e) {
                answer(browser, HttpResponseStatus.BAD_REQUEST);
                return;
            }
            ((HttpServerCodec) browser.pipeline().get(CODEC)).removeInboundHandler();
            tunnel.openStream(target, "floor", Duration.ofSeconds(10)).addListener(f -> {
                if (!f.isSuccess()) {
                    System.err.println("open refused: " + f.cause()); // as the port forward prints it
                    answer(browser, HttpResponseStatus.BAD_GATEWAY);
                    return;
                }
                Channel stream = (Channel) f.getNow();
                if (!browser.isActive()) {
                    stream.close();
                    return;
                }
                browser.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                        new HttpResponseStatus(200, "Connection established"), Unpooled.EMPTY_BUFFER))
                        .addListener(w -> {
                            if (!w.isSuccess()) {
                                stream.close();
                                return;
                            }
                            browser.pipeline().remove(CODEC);
                            browser.pipeline().remove(this);
                            RelayHandler.link(browser, stream, null);
                        });
            });
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (!started) {
                ctx.read(); // the head is not complete yet
            }
        }

        private static void answer(Channel browser, HttpResponseStatus status) {
            if (!browser.isActive()) {
                return;
            }
            DefaultFullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                    Unpooled.EMPTY_BUFFER);
            response.headers().set(HttpHeaderNames.CONNECTION, "close");
            browser.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
