package dev.previewtunnel.mux.client;

import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.mux.codec.MuxPipeline;
import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketClientHandshaker;
import io.netty.handler.codec.http.websocketx.WebSocketClientHandshakerFactory;
import io.netty.handler.codec.http.websocketx.WebSocketVersion;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Dials a gateway: TCP (and TLS for {@code wss://}), the WebSocket upgrade carrying the connection token in a
 * header and the protocol version as subprotocol, then the HTTP/2 client preface. A refused upgrade becomes a
 * {@link TunnelConnectException} that says why (token refused, version mismatch, wrong path...).
 */
public final class TunnelClient {
    private final EventLoopGroup group;
    private final Class<? extends SocketChannel> channelType;
    private final MuxSettings settings;
    private final String subprotocol;
    /** The group's loops, for {@link #loops()} (a group's loops never change). */
    private final List<EventLoop> loops = new ArrayList<>();

    public TunnelClient(EventLoopGroup group, Class<? extends SocketChannel> channelType, MuxSettings settings) {
        this(group, channelType, settings, MuxProtocol.SUBPROTOCOL);
    }

    /** Offering {@code subprotocol} instead of this build's version: only a test plays a client of another build. */
    TunnelClient(EventLoopGroup group, Class<? extends SocketChannel> channelType, MuxSettings settings,
                 String subprotocol) {
        this.group = group;
        this.channelType = channelType;
        this.settings = settings;
        this.subprotocol = subprotocol;
        for (EventExecutor e : group) {
            loops.add((EventLoop) e);
        }
    }

    /** The event loops of this client's group, in the group's order (a pool keeps connections on each). */
    public List<EventLoop> loops() {
        return java.util.Collections.unmodifiableList(loops);
    }

    /**
     * Cancel the returned future to abandon the attempt: its connection is closed, even if the handshake completes.
     *
     * @param url    {@code ws://host:port/path} or {@code wss://...}
     * @param token  connection token, sent as {@code Authorization: Bearer}; never put in the URL; null sends no
     *               token (a diagnostic asking only whether a gateway answers: it refuses with 401)
     * @param ssl    client TLS context for {@code wss://}, or null for {@code ws://}
     */
    public Future<TunnelConnection> connect(URI url, String token, SslContext ssl, Duration timeout) {
        return connect(url, token, ssl, timeout, group.next());
    }

    /**
     * As {@link #connect(URI, String, SslContext, Duration)}, on the given loop of this client's group: a pool
     * keeps connections on each of the loops itself (see {@link #loops()}).
     */
    public Future<TunnelConnection> connect(URI url, String token, SslContext ssl, Duration timeout, EventLoop loop) {
        // One loop for the channel and its promise. Taking group.next() once for the promise and again in the
        // bootstrap advanced the round-robin twice per connection: with two loops every tunnel connection of a
        // pool landed on the same one, and the other loop only ever served browser sockets.
        Promise<TunnelConnection> promise = loop.newPromise();
        boolean tls = "wss".equalsIgnoreCase(url.getScheme());
        if (!tls && !"ws".equalsIgnoreCase(url.getScheme())) {
            promise.setFailure(new TunnelConnectException("gateway URL must be ws:// or wss://"));
            return promise;
        }
        if (tls && ssl == null) {
            promise.setFailure(new TunnelConnectException("wss:// needs a TLS context"));
            return promise;
        }
        if (url.getRawQuery() != null || url.getRawUserInfo() != null) {
            promise.setFailure(new TunnelConnectException(
                    "gateway URL must not carry a query or user info (tokens travel in headers)"));
            return promise;
        }
        int port = url.getPort() > 0 ? url.getPort() : (tls ? 443 : 80);
        HttpHeaders headers = new DefaultHttpHeaders();
        if (token != null) {
            headers.set(MuxProtocol.TOKEN_HEADER, MuxProtocol.TOKEN_SCHEME + token);
        }
        WebSocketClientHandshaker handshaker = WebSocketClientHandshakerFactory.newHandshaker(
                url, WebSocketVersion.V13, subprotocol, false, headers,
                settings.maxWebSocketMessage(), true, false);

        Bootstrap bootstrap = new Bootstrap()
                .group(loop)
                .channel(channelType)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) timeout.toMillis())
                .option(ChannelOption.RCVBUF_ALLOCATOR, ReadBuffers.allocator())
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (tls) {
                            io.netty.handler.ssl.SslHandler sslHandler = ssl.newHandler(ch.alloc(), url.getHost(), port);
                            // Say why TLS failed (untrusted certificate, wrong name) before the close is seen.
                            sslHandler.handshakeFuture().addListener(h -> {
                                if (!h.isSuccess()) {
                                    promise.tryFailure(new TunnelConnectException(
                                            TunnelConnectException.Reason.TLS_FAILED, "TLS handshake with the gateway "
                                            + "failed: " + rootMessage(h.cause()) + " (is the gateway CA trusted, "
                                            + "and does its certificate name " + url.getHost() + "?)"));
                                }
                            });
                            ch.pipeline().addLast("tls", sslHandler);
                        }
                        ch.pipeline().addLast("http", new HttpClientCodec());
                        ch.pipeline().addLast("http-aggregator", new HttpObjectAggregator(16 * 1024));
                        ch.pipeline().addLast("ws-handshake", new HandshakeHandler(handshaker, promise));
                    }
                });
        ChannelFuture connect = bootstrap.connect(url.getHost(), port);
        // Cancelling the returned future abandons the attempt: its channel is closed at once, whatever stage the
        // handshake is at. An owner that stops must not leave that to its event loops' shutdown, which closes only
        // the channels registered when it begins: a channel registered and connected by the shutdown's last tasks
        // stays open, and the gateway kept it as a tunnel connection nobody would ever use or close.
        promise.addListener(f -> {
            if (f.isCancelled()) {
                connect.channel().close();
            }
        });
        connect.addListener(f -> {
            if (!f.isSuccess()) {
                promise.tryFailure(new TunnelConnectException(f.cause() instanceof ConnectTimeoutException
                        ? TunnelConnectException.Reason.NO_ANSWER : TunnelConnectException.Reason.UNREACHABLE,
                        "cannot reach gateway " + url.getHost() + ":" + port + ": " + f.cause().getMessage()));
            } else {
                Channel ch = connect.channel();
                java.util.concurrent.Future<?> deadline = ch.eventLoop().schedule(() -> {
                    if (promise.tryFailure(new TunnelConnectException(TunnelConnectException.Reason.NO_ANSWER,
                            "gateway did not complete the WebSocket handshake within " + timeout.toMillis() + " ms"))) {
                        ch.close();
                    }
                }, timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
                // Both only matter during the handshake: once it ended, the deadline goes, and the connection's
                // close (hours later) builds no exception for a promise long complete.
                promise.addListener(p -> deadline.cancel(false));
                ch.closeFuture().addListener(c -> {
                    if (!promise.isDone()) {
                        promise.tryFailure(new TunnelConnectException(TunnelConnectException.Reason.CLOSED,
                                "gateway closed the connection during the handshake"));
                    }
                });
            }
        });
        return promise;
    }

    private final class HandshakeHandler extends SimpleChannelInboundHandler<FullHttpResponse> {
        private final WebSocketClientHandshaker handshaker;
        private final Promise<TunnelConnection> promise;

        HandshakeHandler(WebSocketClientHandshaker handshaker, Promise<TunnelConnection> promise) {
            this.handshaker = handshaker;
            this.promise = promise;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            io.netty.handler.ssl.SslHandler tls = ctx.pipeline().get(io.netty.handler.ssl.SslHandler.class);
            if (tls == null) {
                handshaker.handshake(ctx.channel());
                return;
            }
            // Send the upgrade (with the token) only once TLS is up: nothing secret is queued before the peer is
            // authenticated, and a failed TLS handshake leaves no request behind in SslHandler's queue (where
            // it was seen to leak).
            tls.handshakeFuture().addListener(h -> {
                if (h.isSuccess()) {
                    handshaker.handshake(ctx.channel());
                }
            });
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse response) {
            if (response.decoderResult().isFailure()) {
                promise.tryFailure(new TunnelConnectException("gateway answered the upgrade with something that is "
                        + "not HTTP"));
                ctx.close();
                return;
            }
            if (!HttpResponseStatus.SWITCHING_PROTOCOLS.equals(response.status())) {
                promise.tryFailure(new TunnelConnectException(TunnelConnectException.Reason.REFUSED,
                        describeRefusal(response, subprotocol), answer(response)));
                ctx.close();
                return;
            }
            try {
                handshaker.finishHandshake(ctx.channel(), response);
            } catch (RuntimeException e) {
                promise.tryFailure(new TunnelConnectException("WebSocket handshake failed: " + e.getMessage()));
                ctx.close();
                return;
            }
            if (!subprotocol.equals(handshaker.actualSubprotocol())) {
                promise.tryFailure(new TunnelConnectException("gateway did not confirm protocol "
                        + subprotocol + " (it is not a preview-tunnel gateway of this version)"));
                ctx.close();
                return;
            }
            Channel ch = ctx.channel();
            if (group.isShuttingDown()) {
                // The owner is stopping its event loops: the promise's listeners (on another loop of the group)
                // may never run, so nobody would ever own, or close, this connection. Seen as a tunnel connection
                // left open on the gateway after an ingress closed during a handshake.
                promise.tryFailure(new TunnelConnectException("event loops are shutting down"));
                ctx.close();
                return;
            }
            // finishHandshake replaced the HTTP codec and removed the aggregator; only this handler remains.
            if (ch.pipeline().get("http-aggregator") != null) {
                ch.pipeline().remove("http-aggregator");
            }
            ch.pipeline().remove(this);
            TunnelConnection connection = new TunnelConnection(ch, settings, answer(response));
            MuxPipeline.install(ch, false, settings, null, connection.connectionHandler());
            if (!promise.trySuccess(connection)) {
                ch.close(); // cancelled or timed out meanwhile: nobody will own this connection
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            FatalErrors.check(cause); // an Error means the process, not this connection, is broken
            promise.tryFailure(new TunnelConnectException("gateway connection failed: " + cause.getMessage()));
            ctx.close();
        }
    }

    private static String rootMessage(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String m = root.getMessage();
        return m == null ? root.getClass().getSimpleName() : m.replaceAll("[\\r\\n]", " ");
    }

    static String describeRefusal(FullHttpResponse response, String offered) {
        int status = response.status().code();
        String body = response.content().toString(StandardCharsets.UTF_8);
        String gatewaySays = refusalMessage(body);
        if (status == 426 && gatewaySays != null && body.contains("protocol_version_mismatch")) {
            // The gateway's message names its version and ours: "gateway speaks ptun.v1, client offered ...".
            return "tunnel protocol version mismatch: this client speaks " + offered + "; " + gatewaySays;
        }
        if (body.length() > 300) {
            body = body.substring(0, 300);
        }
        body = body.replaceAll("[^\\x20-\\x7e]", " ").trim();
        String why = switch (status) {
            case 401 -> "gateway refused the connection token";
            case 403 -> "gateway refused the connection";
            case 404 -> "no tunnel endpoint at that path";
            case 426 -> "tunnel protocol version mismatch: the gateway does not speak " + offered;
            case 429 -> "gateway is limiting connections; retry later";
            default -> "gateway answered the upgrade with HTTP " + status;
        };
        return why + (body.isEmpty() ? "" : " [" + body + "]");
    }

    /** The answer as a caller may act on it: status, the JSON refusal's error and message, the Date header. */
    private static UpgradeAnswer answer(FullHttpResponse response) {
        String body = response.content().toString(StandardCharsets.UTF_8);
        return new UpgradeAnswer(response.status().code(), refusalField(body, "error"), refusalMessage(body),
                response.headers().get(HttpHeaderNames.DATE));
    }

    /** The {@code message} of a gateway's JSON refusal, printable characters only; null if there is none. */
    private static String refusalMessage(String body) {
        return refusalField(body, "message");
    }

    /** A text field of a gateway's JSON refusal, printable characters only, at most 300; null if there is none. */
    private static String refusalField(String body, String field) {
        if (body.isEmpty()) {
            return null;
        }
        try {
            String value = JsonTrees.parse(body).path(field).asText(null);
            if (value == null) {
                return null;
            }
            value = value.replaceAll("[^\\x20-\\x7e]", " ").trim();
            return value.length() > 300 ? value.substring(0, 300) : value;
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        }
    }
}
