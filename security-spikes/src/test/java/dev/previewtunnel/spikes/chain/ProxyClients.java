package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.ingress.session.BrowserSession;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.proxy.HttpProxyHandler;
import io.netty.handler.proxy.ProxyConnectionEvent;

import java.net.Authenticator;
import java.net.InetSocketAddress;
import java.net.PasswordAuthentication;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.time.Duration;

import javax.net.ssl.SSLContext;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Real clients configured the way a browser session is: the ingress as HTTP proxy, with the session's credential. */
final class ProxyClients {
    private ProxyClients() {
    }

    /** The JDK's HTTP client: absolute-form requests for http://, CONNECT for WebSockets, Basic proxy auth. */
    static HttpClient httpClient(InetSocketAddress proxy, String user, String password) {
        return httpClient(proxy, user, password, null);
    }

    /** As above, trusting what {@code tls} trusts for https:// (null: the JDK's default trust). */
    static HttpClient httpClient(InetSocketAddress proxy, String user, String password, SSLContext tls) {
        HttpClient.Builder builder = HttpClient.newBuilder();
        if (tls != null) {
            builder.sslContext(tls);
        }
        return builder
                .version(HttpClient.Version.HTTP_1_1)
                .proxy(ProxySelector.of(proxy))
                .connectTimeout(Duration.ofSeconds(10))
                .authenticator(new Authenticator() {
                    @Override
                    protected PasswordAuthentication getPasswordAuthentication() {
                        return getRequestorType() == RequestorType.PROXY
                                ? new PasswordAuthentication(user, password.toCharArray()) : null;
                    }
                })
                .build();
    }

    /**
     * Writes {@code head} (request line and headers, no final empty line) to the proxy as it is, with the
     * session's {@code Proxy-Authorization}, and returns everything answered until the proxy closed: for
     * asserting the exact status line and headers of a refusal, which client libraries hide for CONNECT.
     */
    static String rawExchange(InetSocketAddress proxy, BrowserSession session, String head) throws java.io.IOException {
        String auth = java.util.Base64.getEncoder().encodeToString((session.username() + ":" + session.password())
                .getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return rawExchange(proxy, head + "\r\nProxy-Authorization: Basic " + auth);
    }

    /** As above, with exactly the headers given (none added). */
    static String rawExchange(InetSocketAddress proxy, String head) throws java.io.IOException {
        try (java.net.Socket s = new java.net.Socket(proxy.getAddress(), proxy.getPort())) {
            s.setSoTimeout(15_000);
            s.getOutputStream().write((head + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            return new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.ISO_8859_1);
        }
    }

    static HttpClient httpClient(InetSocketAddress proxy, BrowserSession session) {
        return httpClient(proxy, session.username(), session.password());
    }

    /**
     * Opens a raw tunnel through the proxy with Netty's own CONNECT client ({@code HttpProxyHandler}), then puts
     * {@code handler} in the pipeline. The returned channel has auto-read as configured by {@code autoRead}.
     */
    static Channel connectTunnel(EventLoopGroup group, InetSocketAddress proxy, BrowserSession session,
                                 String host, int port, ChannelHandler handler, boolean autoRead) throws Exception {
        return connectTunnel(group, proxy, session == null ? null : session.username(),
                session == null ? null : session.password(), host, port, handler, autoRead);
    }

    static Channel connectTunnel(EventLoopGroup group, InetSocketAddress proxy, String user, String password,
                                 String host, int port, ChannelHandler handler, boolean autoRead) throws Exception {
        return connectTunnel(group, proxy, user, password, host, port, handler, autoRead, 0);
    }

    /** As above; with {@code receiveBuffer} > 0 the client's socket receive buffer is fixed (SO_RCVBUF). */
    static Channel connectTunnel(EventLoopGroup group, InetSocketAddress proxy, String user, String password,
                                 String host, int port, ChannelHandler handler, boolean autoRead, int receiveBuffer)
            throws Exception {
        CompletableFuture<Channel> ready = new CompletableFuture<>();
        Bootstrap b = new Bootstrap().group(group).channel(NioSocketChannel.class);
        if (receiveBuffer > 0) {
            b.option(ChannelOption.SO_RCVBUF, receiveBuffer); // before connect: the window scale depends on it
        }
        b
                .option(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .option(ChannelOption.AUTO_READ, autoRead)
                .resolver(io.netty.resolver.NoopAddressResolverGroup.INSTANCE)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        HttpProxyHandler proxyHandler = user == null ? new HttpProxyHandler(proxy)
                                : new HttpProxyHandler(proxy, user, password);
                        proxyHandler.setConnectTimeoutMillis(10_000);
                        // The handler's own verdict (e.g. a 407) is the source of truth for failures.
                        proxyHandler.connectFuture().addListener(f -> {
                            if (!f.isSuccess()) {
                                ready.completeExceptionally(f.cause());
                            }
                        });
                        ch.pipeline().addLast(proxyHandler);
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                                if (evt instanceof ProxyConnectionEvent) {
                                    ctx.pipeline().replace(this, "app", handler);
                                    ready.complete(ctx.channel());
                                } else {
                                    ctx.fireUserEventTriggered(evt);
                                }
                            }

                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                io.netty.util.ReferenceCountUtil.release(msg);
                            }

                            @Override
                            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                ready.completeExceptionally(cause);
                                ctx.close();
                            }

                            @Override
                            public void channelInactive(ChannelHandlerContext ctx) {
                                // Let the proxy handler report its verdict first (it runs in this same loop).
                                ctx.executor().execute(() -> ready.completeExceptionally(
                                        new IllegalStateException("closed before CONNECT completed")));
                            }
                        });
                    }
                });
        b.connect(InetSocketAddress.createUnresolved(host, port)).addListener(f -> {
            if (!f.isSuccess()) {
                ready.completeExceptionally(f.cause());
            }
        });
        return ready.get(20, TimeUnit.SECONDS);
    }
}
