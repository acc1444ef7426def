package dev.previewtunnel.gateway;

import dev.previewtunnel.gateway.admin.AdminServer;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.RevocationList;
import dev.previewtunnel.grants.VerificationKeysSource;
import dev.previewtunnel.grants.VerifiedToken;
import dev.previewtunnel.mux.audit.AuditLog;
import dev.previewtunnel.mux.codec.MuxPipeline;
import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.local.LocalHttpServer;
import dev.previewtunnel.mux.net.ConnectionBudget;
import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.server.TunnelServerUpgradeHandler;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.ssl.OpenSslContext;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.GlobalEventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The environment side: a WebSocket endpoint dedicated to tunnel traffic. Each connection is authenticated by
 * its token at upgrade; each stream on it is authorised by its own grant ({@link StreamAuthorizer}).
 */
public final class GatewayServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(GatewayServer.class);
    /** A stream that moves no bytes for this long during a drain is cut ({@code --drain-idle-timeout}). */
    public static final Duration DEFAULT_DRAIN_IDLE = Duration.ofSeconds(5);

    private final GatewayConfig config;
    private final Transports transports = Transports.best();
    private final EventLoopGroup group;
    private final ExecutorService blocking;
    private final ChannelGroup connections = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final GatewayContext context;
    private final AtomicLong connectionIds = new AtomicLong();
    private final AtomicBoolean closing = new AtomicBoolean();
    private Channel serverChannel;
    /** Tunnel connections in all, and those still in the handshake: both capped (docs/security.md, 5). */
    private ConnectionBudget budget;
    private volatile AdminServer admin;
    private volatile RevocationStore store; // null: revocations last until this process ends
    private volatile Duration drainIdle = DEFAULT_DRAIN_IDLE;

    private GatewayServer(GatewayConfig config, GrantVerifier verifier, RevocationList revocations,
                          MeterRegistry registry) {
        this.config = config;
        this.group = transports.newGroup(config.ioThreads(), "ptun-gateway");
        FatalErrors.watch(group, closing::get); // a loop that dies unasked ends the process (when installed)
        this.blocking = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "ptun-gateway-dns");
            t.setDaemon(true);
            return t;
        });
        MuxSettings mux = config.mux();
        TargetDialer dialer = new TargetDialer(transports.socketChannel(), config.dialTimeout(),
                new WriteBufferWaterMark(mux.streamWriteLowWaterMark(), mux.streamWriteHighWaterMark()));
        LiveStreams live = new LiveStreams();
        this.context = new GatewayContext(config, verifier, revocations, dialer, live,
                new SessionLimiter(config.limits()), new GatewayMetrics(registry, live), new AuditLog("gateway"),
                blocking);
    }

    /**
     * Binds and returns a running gateway; {@link #address()} tells where (useful with port 0). Grants are
     * verified against {@code keys} with the config's verifier policy and this gateway's revocation list.
     */
    public static GatewayServer start(GatewayConfig config, VerificationKeysSource keys, SslContext tls,
                                      MeterRegistry registry) throws InterruptedException {
        return start(config, keys, tls, registry, null, Clock.systemUTC());
    }

    /**
     * As above, with the revocations of {@code store} (null: none) in force from the first connection, and every
     * new revocation written to it before the admin endpoint answers. {@code clock} drives verification and the
     * revocations' retention (tests move it by hand).
     */
    public static GatewayServer start(GatewayConfig config, VerificationKeysSource keys, SslContext tls,
                                      MeterRegistry registry, RevocationStore store, Clock clock)
            throws InterruptedException {
        RevocationList revocations = new RevocationList(clock, config.verifierPolicy(),
                config.limits().maxRevocations());
        if (store != null) {
            revocations.restore(store.restored());
        }
        GrantVerifier verifier = new GrantVerifier(keys, clock, config.verifierPolicy(), revocations);
        return start(config, verifier, revocations, store, tls, registry);
    }

    /** As above with a verifier built by the caller (revocations then only close live streams). */
    public static GatewayServer start(GatewayConfig config, GrantVerifier verifier, SslContext tls,
                                      MeterRegistry registry) throws InterruptedException {
        return start(config, verifier, new RevocationList(Clock.systemUTC(), config.verifierPolicy(),
                config.limits().maxRevocations()), null, tls, registry);
    }

    private static GatewayServer start(GatewayConfig config, GrantVerifier verifier, RevocationList revocations,
                                       RevocationStore store, SslContext tls, MeterRegistry registry)
            throws InterruptedException {
        GatewayServer server = new GatewayServer(config, verifier, revocations, registry);
        server.store = store;
        try {
            server.bind(tls);
        } catch (InterruptedException | RuntimeException e) {
            // Do not leak the event loops and the DNS pool of a gateway that never started.
            server.group.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            server.blocking.shutdownNow();
            throw e;
        }
        return server;
    }

    private void bind(SslContext tls) throws InterruptedException {
        MuxSettings mux = config.mux();
        TokenAuthenticator authenticator = new TokenAuthenticator(context);
        // Summaries of repeated refusals are written when their window ends, and at close.
        group.next().scheduleAtFixedRate(() -> context.audit().flushRepeated(false), 1, 1, TimeUnit.SECONDS);
        int total = ConnectionBudget.clipToFdLimit("max-tunnel-connections", config.limits().maxConnections(),
                ConnectionBudget.fdLimit());
        // The handshake deadline is HandshakeDeadline's; the budget only counts.
        budget = new ConnectionBudget("gateway tunnel listener", total,
                Math.min(total, config.limits().maxHandshaking()), null);
        serverChannel = new ServerBootstrap()
                .group(group)
                .channel(transports.serverSocketChannel())
                // A restarted gateway must get its port back while old connections sit in TIME_WAIT.
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.RCVBUF_ALLOCATOR, ReadBuffers.allocator())
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (!budget.admit(ch)) {
                            return; // over budget: closed at accept, nothing read
                        }
                        if (tls != null) {
                            ch.pipeline().addLast("tls", tls.newHandler(ch.alloc()));
                        }
                        ch.pipeline().addLast(HandshakeDeadline.NAME, new HandshakeDeadline(config.handshakeTimeout()));
                        ch.pipeline().addLast("http", new HttpServerCodec(4096, 8192, 8192));
                        ch.pipeline().addLast("http-aggregator", new HttpObjectAggregator(8192));
                        ch.pipeline().addLast("date", new DateHeader());
                        ch.pipeline().addLast("upgrade", new TunnelServerUpgradeHandler(config.path(), mux,
                                authenticator, new Acceptor()));
                    }
                })
                .bind(config.listen())
                .sync()
                .channel();
        log.info("gateway listening on {} (transport {}{})", url(tls != null), transports.name(),
                tls == null ? "" : ", tls " + (tls instanceof OpenSslContext ? "openssl" : "jdk"));
    }

    private final class Acceptor implements TunnelServerUpgradeHandler.Acceptor {
        @Override
        public ChannelHandler inboundStreamHandler(Channel parent, Object principal) {
            String connectionId = "c" + connectionIds.incrementAndGet();
            parent.attr(CONNECTION_ID).set(connectionId);
            VerifiedToken token = (VerifiedToken) principal;
            ConnectionState state = ConnectionState.of(connectionId, config, token.jti(),
                    parent.attr(TokenAuthenticator.TOKEN).get());
            return new ChannelInitializer<Http2StreamChannel>() {
                @Override
                protected void initChannel(Http2StreamChannel ch) {
                    ReadBuffers.relayReads(ch); // relayed to its target once granted
                    state.writeShares.add(ch); // its write high-water mark: a share of the connection's budget
                    ch.pipeline().addLast(context.metrics().streamMeter()); // observes only: bytes, open time
                    ch.pipeline().addLast(new StreamAuthorizer(context, state));
                }
            };
        }

        @Override
        public ChannelHandler connectionHandler(Channel parent, Object principal) {
            return new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    io.netty.util.ReferenceCountUtil.release(msg);
                }
            };
        }

        @Override
        public void upgraded(Channel parent, Object principal) {
            parent.pipeline().remove(HandshakeDeadline.NAME);
            ConnectionBudget.trust(parent); // token verified: off the handshaking cap
            VerifiedToken verified = (VerifiedToken) principal;
            parent.attr(TOKEN_ID).set(verified.jti());
            connections.add(parent);
            if (context.revocations().isRevoked(verified.jti())) {
                parent.close(); // revoked between its verification and now: revokeGrant may have missed it
                return;
            }
            context.metrics().connectionOpened(parent);
            IdleConnectionReaper.watch(parent, config.limits().connectionIdleTimeout());
            VerifiedToken token = (VerifiedToken) principal;
            context.audit().event("connection_opened")
                    .put("conn", parent.attr(CONNECTION_ID).get())
                    .put("env", token.environment())
                    .put("tokenId", token.jti())
                    .put("remote", String.valueOf(parent.remoteAddress()))
                    .write();
            parent.closeFuture().addListener(f -> context.audit().event("connection_closed")
                    .put("conn", parent.attr(CONNECTION_ID).get()).write());
        }
    }

    /**
     * Adds a {@code Date} header to the one HTTP answer of a connection (the 101 or a refusal), so a client can
     * measure its clock skew against the gateway's (grants are checked with a 30 s allowance; see
     * {@code desktop-ingress doctor}); then leaves the pipeline.
     */
    private static final class DateHeader extends io.netty.channel.ChannelOutboundHandlerAdapter {
        @Override
        public void write(ChannelHandlerContext ctx, Object msg, io.netty.channel.ChannelPromise promise) {
            if (msg instanceof io.netty.handler.codec.http.HttpResponse response) {
                response.headers().set(io.netty.handler.codec.http.HttpHeaderNames.DATE,
                        io.netty.handler.codec.DateFormatter.format(new java.util.Date()));
                ctx.write(msg, promise);
                ctx.pipeline().remove(this);
                return;
            }
            ctx.write(msg, promise);
        }
    }

    /** The jti of the connection token a tunnel connection was opened with (revoking it closes the connection). */
    private static final io.netty.util.AttributeKey<String> TOKEN_ID =
            io.netty.util.AttributeKey.valueOf("ptun.gateway.tokenId");
    private static final io.netty.util.AttributeKey<String> CONNECTION_ID =
            io.netty.util.AttributeKey.valueOf("ptun.connectionId");

    public InetSocketAddress address() {
        return (InetSocketAddress) serverChannel.localAddress();
    }

    /** {@code ws://host:port/path} as the ingress should dial it. */
    public String url(boolean tls) {
        InetSocketAddress a = address();
        String host = io.netty.util.NetUtil.toAddressString(a.getAddress(), true);
        return (tls ? "wss://" : "ws://") + host + ":" + a.getPort() + config.path();
    }

    /** The configuration this server runs with (limits included). */
    public GatewayConfig config() {
        return config;
    }

    public LiveStreams liveStreams() {
        return context.liveStreams();
    }

    public GatewayMetrics metrics() {
        return context.metrics();
    }

    /**
     * Revokes one grant: refused from now on, and every live stream opened with it is reset now.
     * Returns how many live streams were closed.
     */
    public int revokeGrant(String jti) {
        context.revocations().revokeGrant(jti);
        int closed = context.liveStreams().closeGrant(jti);
        // The id may be a connection token's: its tunnel connections end too, not only its future upgrades.
        int closedConnections = 0;
        for (Channel c : connections) {
            if (jti.equals(c.attr(TOKEN_ID).get())) {
                c.close();
                closedConnections++;
            }
        }
        context.audit().event("revoked").put("grant", jti).put("closedStreams", closed)
                .put("closedConnections", closedConnections).write();
        persistRevocations();
        return closed;
    }

    /** Revokes every grant of a browser session issued until now, closing its live streams. */
    public int revokeSession(String session) {
        context.revocations().revokeSession(session);
        int closed = context.liveStreams().closeSession(session);
        context.audit().event("revoked").put("session", session).put("closedStreams", closed).write();
        persistRevocations();
        return closed;
    }

    /** The tunnel listener's connection budget (open, handshaking and refused counts). */
    public ConnectionBudget connectionBudget() {
        return budget;
    }

    /**
     * Writes the whole list to the store (blocking: fsync). The revocation is already in force and its streams
     * closed; a failure here means it would not survive a restart, which the caller must be told.
     */
    private void persistRevocations() {
        RevocationStore s = store;
        if (s == null) {
            return;
        }
        try {
            s.save(context.revocations()::entries);
        } catch (java.io.IOException e) {
            throw new RevocationNotPersistedException(s.file(), e);
        }
    }

    /** A revocation in force in this process that could not be written to the state directory. */
    public static final class RevocationNotPersistedException extends IllegalStateException {
        RevocationNotPersistedException(java.nio.file.Path file, java.io.IOException cause) {
            super("revoked, but could not write " + file + " (" + cause.getClass().getSimpleName()
                    + "): the revocation holds until this gateway restarts");
        }
    }

    public int connectionCount() {
        return connections.size();
    }

    public String transportName() {
        return transports.name();
    }

    /**
     * Starts the admin endpoint (revocation, status) on a loopback address, on this gateway's event loops; it
     * stops with the gateway. The token goes to {@code tokenFile} (owner-only), never to any output.
     */
    public AdminServer startAdmin(InetSocketAddress listen, java.nio.file.Path tokenFile)
            throws java.io.IOException, InterruptedException {
        return startAdmin(listen, tokenFile, LocalHttpServer.Limits.defaults());
    }

    /** As above, with the request deadline and connection cap of {@code limits}. */
    public AdminServer startAdmin(InetSocketAddress listen, java.nio.file.Path tokenFile,
                                  LocalHttpServer.Limits limits) throws java.io.IOException, InterruptedException {
        // Its own loop: a revocation is fsync-ed before the answer, which must not stall tunnel traffic.
        EventLoopGroup adminGroup = transports.newGroup(1, "ptun-gateway-admin");
        AdminServer server;
        try {
            server = AdminServer.start(this, config.environment(), listen, tokenFile, adminGroup,
                    transports.serverSocketChannel(), limits);
        } catch (java.io.IOException | InterruptedException | RuntimeException e) {
            adminGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            throw e;
        }
        admin = server;
        return server;
    }

    /** How long a stream may move no bytes during a drain before it is cut (default {@link #DEFAULT_DRAIN_IDLE}). */
    public GatewayServer drainIdleTimeout(Duration idle) {
        this.drainIdle = idle;
        return this;
    }

    /**
     * Graceful stop by activity: no new connections; every tunnel connection gets GOAWAY; streams moving bytes may
     * finish within the drain timeout (the maximum), a stream idle for the drain idle timeout is cut at once
     * ({@link GatewayDrain}: each cut is an audit line); then everything left is closed.
     */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return; // closed already (its event loops are gone): a second close has nothing to do
        }
        if (admin != null) {
            admin.close();
        }
        if (serverChannel != null) {
            serverChannel.close().syncUninterruptibly();
        }
        // GOAWAY on every connection; each closes once its open streams end, within the drain timeout (not the
        // codec's default bound, the keepalive timeout). The codec's own bound is set past ours, so that what is
        // still open at our deadline is reported as cut at the maximum (drain.finish) before it is closed.
        long deadline = System.nanoTime() + config.drainTimeout().toNanos();
        GatewayDrain drain = GatewayDrain.start(context, drainIdle, group.next());
        List<ChannelFuture> drains = new ArrayList<>();
        for (Channel c : connections) {
            context.metrics().connectionDraining(c);
            drains.add(MuxPipeline.closeGracefully(c, config.drainTimeout().plusSeconds(2)));
        }
        for (ChannelFuture drained : drains) {
            drained.awaitUninterruptibly(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
        drain.finish(); // what is still open now is cut at the maximum: said here, closed just below
        // Whatever the drain left open is closed here, not left to the loops' shutdown: with no quiet period
        // Netty 4.2 does not reliably close the channels still registered, and their sockets would stay open.
        connections.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        context.audit().flushRepeated(true);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        blocking.shutdownNow();
    }

    /** Abrupt stop for tests of failure handling: drops every connection without GOAWAY, as a crash would. */
    public void kill() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        if (serverChannel != null) {
            serverChannel.close().syncUninterruptibly();
        }
        for (Channel c : connections) {
            // Close from the head of the pipeline: the socket goes (RST, no GOAWAY written), while every handler
            // still sees channelInactive and frees what it holds, as the process's own teardown would not need to.
            c.eventLoop().execute(() -> {
                c.config().setOption(ChannelOption.SO_LINGER, 0);
                c.pipeline().firstContext().close();
            });
            c.closeFuture().awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        blocking.shutdownNow();
    }

    static Clock clock() {
        return Clock.systemUTC();
    }
}
