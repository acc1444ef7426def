package dev.previewtunnel.sampleapp;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerExpectContinueHandler;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolConfig;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import io.netty.handler.stream.ChunkedWriteHandler;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.zip.CRC32;

/**
 * The "target" that the preview tunnel carries traffic to: a small embeddable Netty HTTP/1.1 + WebSocket server.
 * It knows nothing about the tunnel.
 *
 * <p>Endpoints: {@code GET /}, {@code /hello}, {@code /stream?chunks=N&size=S}, {@code /bytes?n=N},
 * {@code POST /upload}, {@code /ws} (WebSocket echo), {@code /cookie/set?name=v}, {@code /cookie/get},
 * {@code /redirect?to=PATH}, {@code /login?to=PATH&session=v} and {@code /login/absolute?...} (302 that sets
 * the cookie, relative or absolute same-authority {@code Location}), {@code /echo-headers},
 * {@code /gated-bytes?gate=NAME&n=N} (as {@code /bytes}, held until the test opens the {@link #gate gate});
 * anything else is 404.
 */
public final class SampleApp implements AutoCloseable {
    /** Largest accepted WebSocket frame payload. */
    public static final int MAX_WEBSOCKET_FRAME = 1024 * 1024;
    /** Marker string contained in the {@code GET /} page. */
    public static final String INDEX_MARKER = "sample-app-ok";
    /** Exact body of {@code GET /hello}. */
    public static final String HELLO_BODY = PageRoutes.HELLO_BODY;

    private final EventLoopGroup group;
    private final Channel serverChannel;
    private final ConnectionCounter accepted = new ConnectionCounter();
    private final ConnectionCounter served = new ConnectionCounter();
    /** Connections accepted and not yet closed. */
    private final java.util.concurrent.atomic.AtomicInteger open = new java.util.concurrent.atomic.AtomicInteger();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Map<String, ResponseGate> gates = new java.util.concurrent.ConcurrentHashMap<>();

    private SampleApp(String host, int port) {
        group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        WebSocketServerProtocolConfig wsConfig = WebSocketServerProtocolConfig.newBuilder()
                .websocketPath("/ws")
                .checkStartsWith(true)
                .handleCloseFrames(true)
                .decoderConfig(WebSocketDecoderConfig.newBuilder()
                        .maxFramePayloadLength(MAX_WEBSOCKET_FRAME)
                        .build())
                .build();
        ServerBootstrap b = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        accepted.increment();
                        open.incrementAndGet();
                        ch.closeFuture().addListener(f -> open.decrementAndGet());
                        ChannelPipeline p = ch.pipeline();
                        p.addLast("http", new HttpServerCodec());
                        p.addLast("expect-continue", new HttpServerExpectContinueHandler());
                        p.addLast("chunked-writer", new ChunkedWriteHandler());
                        p.addLast("websocket", new WebSocketServerProtocolHandler(wsConfig));
                        p.addLast("app", new SampleAppHandler(SampleApp.this::requestServed, SampleApp.this::gate));
                        p.addLast("ws-echo", new WebSocketEchoHandler());
                    }
                });
        Channel ch;
        try {
            ch = b.bind(host, port).syncUninterruptibly().channel();
        } catch (RuntimeException e) {
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
            throw bindFailure(host, port, e);
        }
        serverChannel = ch;
    }

    static RuntimeException bindFailure(String host, int port, Throwable e) {
        String what = "could not listen on " + HostPort.format(host, port);
        if (e instanceof IOException) {
            return new UncheckedIOException(what + ": " + e.getMessage(), (IOException) e);
        }
        return new IllegalStateException(what, e);
    }

    /**
     * Binds a new server on {@code host:port} ({@code port} 0 = ephemeral), e.g. {@code "127.0.0.1"} or
     * {@code "::1"}. Throws {@link UncheckedIOException} if the address cannot be bound.
     */
    public static SampleApp start(String host, int port) {
        return new SampleApp(host, port);
    }

    /** The bound port. */
    public int port() {
        return address().getPort();
    }

    /** The bound address. */
    public InetSocketAddress address() {
        return (InetSocketAddress) serverChannel.localAddress();
    }

    /** Total TCP connections ever accepted. */
    public int acceptedConnections() {
        return accepted.get();
    }

    /** TCP connections open now (accepted and not yet closed): what a test checks to see nothing was left open. */
    public int openConnections() {
        return open.get();
    }

    /** Total responses started (including error responses and completed WebSocket handshakes). */
    public int requestsServed() {
        return served.get();
    }

    /** Waits until at least {@code n} connections have been accepted; false on timeout. */
    public boolean awaitAcceptedConnections(int n, Duration timeout) throws InterruptedException {
        return accepted.awaitAtLeast(n, timeout);
    }

    /** Waits until at least {@code n} requests have been served; false on timeout. */
    public boolean awaitRequestsServed(int n, Duration timeout) throws InterruptedException {
        return served.awaitAtLeast(n, timeout);
    }

    /**
     * Creates the gate {@code name} for {@code GET /gated-bytes?gate=name}: requests are held until
     * {@link ResponseGate#open()}, or answered 503 once {@code timeout} has passed since the first arrived.
     * {@code parties} is how many the caller expects (for the timeout's message).
     */
    public ResponseGate gate(String name, int parties, Duration timeout) {
        ResponseGate gate = new ResponseGate(name, parties, timeout);
        if (gates.putIfAbsent(name, gate) != null) {
            throw new IllegalArgumentException("gate exists: " + name);
        }
        return gate;
    }

    ResponseGate gate(String name) {
        return gates.get(name);
    }

    void requestServed() {
        served.increment();
    }

    ChannelFuture closeFuture() {
        return serverChannel.closeFuture();
    }

    /** Stops listening, closes all connections and shuts the event loop group down, waiting for it. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            group.terminationFuture().syncUninterruptibly();
            return;
        }
        serverChannel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
    }

    // ---- the deterministic body pattern of /stream and /bytes -------------------------------------------

    /** The pattern byte at absolute body offset {@code offset}. */
    public static byte patternByte(long offset) {
        return Pattern.byteAt(offset);
    }

    /** Fills {@code dst[0..len)} with the pattern bytes at body offsets {@code offset..offset+len). */
    public static void fillPattern(long offset, byte[] dst, int len) {
        Pattern.fill(offset, dst, 0, len);
    }

    /** CRC32 of the first {@code n} pattern bytes, i.e. of the body of {@code /bytes?n=N}. */
    public static CRC32 patternCrc(long n) {
        return Pattern.crc(n);
    }

    // ---- command line -------------------------------------------------------------------------------------

    /**
     * {@code --listen HOST:PORT} (default 127.0.0.1:5173) and optional {@code --raw-listen HOST:PORT} for a
     * {@link RawEchoServer}. Prints one JSON line {@code {"event":"ready","listen":"HOST:PORT"}} (plus
     * {@code "rawListen"} when requested) to stdout once listening, then runs until the JVM is terminated.
     */
    public static void main(String[] args) {
        HostPort listen = new HostPort("127.0.0.1", 5173);
        HostPort rawListen = null;
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--listen":
                        listen = HostPort.parse(argValue(args, ++i));
                        break;
                    case "--raw-listen":
                        rawListen = HostPort.parse(argValue(args, ++i));
                        break;
                    case "-h":
                    case "--help":
                        System.out.println(usage());
                        return;
                    default:
                        throw new IllegalArgumentException("unknown argument: " + args[i]);
                }
            }
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.err.println(usage());
            System.exit(2);
            return;
        }

        SampleApp app = SampleApp.start(listen.host(), listen.port());
        RawEchoServer raw = null;
        try {
            if (rawListen != null) {
                raw = RawEchoServer.start(rawListen.host(), rawListen.port());
            }
        } catch (RuntimeException e) {
            app.close();
            throw e;
        }
        RawEchoServer rawServer = raw;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (rawServer != null) {
                rawServer.close();
            }
            app.close();
        }, "sample-app-shutdown"));

        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("event", "ready");
        ready.put("listen", HostPort.format(listen.host(), app.port()));
        if (rawServer != null) {
            ready.put("rawListen", HostPort.format(rawListen.host(), rawServer.port()));
        }
        try {
            System.out.println(Reply.JSON.writeValueAsString(ready));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        System.out.flush();
        app.closeFuture().syncUninterruptibly();
    }

    private static String argValue(String[] args, int i) {
        if (i >= args.length) {
            throw new IllegalArgumentException("missing value for " + args[i - 1]);
        }
        return args[i];
    }

    private static String usage() {
        return "usage: sample-app [--listen HOST:PORT] [--raw-listen HOST:PORT]";
    }
}
