package dev.previewtunnel.gateway;

import dev.previewtunnel.gateway.revocation.RevocationStore;
import dev.previewtunnel.gateway.revocation.Revocations;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.RevocationList;
import dev.previewtunnel.grants.VerificationKeysSource;
import dev.previewtunnel.grants.VerifiedToken;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.codec.MuxPipeline;
import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.local.net.ConnectionBudget;
import dev.previewtunnel.local.net.ListenAddress;
import dev.previewtunnel.local.net.UnixSocketPath;
import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.server.TunnelServerUpgradeHandler;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.local.shutdown.Shutdown;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelException;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.ssl.OpenSslContext;
import io.netty.handler.ssl.SslContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
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
    private final TunnelConnections connections = new TunnelConnections();
    private final GatewayContext context;
    private final Revocations revocations;
    private final AtomicLong connectionIds = new AtomicLong();
    private final AtomicBoolean closing = new AtomicBoolean();
    private Channel serverChannel;
    private volatile Duration drainIdle = DEFAULT_DRAIN_IDLE;

    private GatewayServer(GatewayConfig config, GrantVerifier verifier, RevocationList revocations,
                          RevocationStore store, MeterRegistry registry) {
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
        this.revocations = new Revocations(revocations, store, live, connections, context.audit());
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
        GatewayServer server = new GatewayServer(config, verifier, revocations, store, registry);
        try {
            server.bind(tls);
        } catch (InterruptedException | RuntimeException e) {
            // Do not leak the event loops and the DNS pool of a gateway that never started.
            Shutdown.begin(server.group);
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
        // Tunnel connections in all, and those still in the handshake: both capped (docs/security.md, 5). The
        // handshake deadline is HandshakeDeadline's; the budget only counts.
        ConnectionBudget budget = new ConnectionBudget("gateway tunnel listener", total,
                Math.min(total, config.limits().maxHandshaking()), null);
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(group)
                .handler(budget.acceptOrder()) // "oldest" is accept order, whichever loop admits first
                .childOption(ChannelOption.RCVBUF_ALLOCATOR, ReadBuffers.allocator())
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
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
                });
        if (config.listen() instanceof UnixDomainSocketAddress socket) {
            serverChannel = bootstrap.channel(transports.serverDomainSocketChannel())
                    .bind(transports.domainSocketAddress(socket)).sync().channel();
            restrictToOwner(socket.getPath());
        } else {
            serverChannel = bootstrap.channel(transports.serverSocketChannel())
                    // A restarted gateway must get its port back while old connections sit in TIME_WAIT.
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .bind(config.listen()).sync().channel();
        }
        log.info("gateway listening on {} (transport {}{})", where(tls != null), transports.name(),
                tls == null ? "" : ", tls " + (tls instanceof OpenSslContext ? "openssl" : "jdk"));
    }

    /**
     * Makes the socket file rw------- before the gateway is announced: connecting to a Unix socket needs write
     * permission on it, so other users cannot even open a connection (docs/operations.md, "Over SSH"). Until this
     * chmod the umask's mode applies; a connection still needs its token, and a 0700 directory closes that window.
     */
    private void restrictToOwner(Path socket) {
        try {
            Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-------"));
        } catch (IOException | UnsupportedOperationException e) {
            serverChannel.close().syncUninterruptibly();
            throw new ChannelException("cannot make the socket file owner-only (" + e.getClass().getSimpleName()
                    + ")", e);
        }
    }

    private final class Acceptor implements TunnelServerUpgradeHandler.Acceptor {
        @Override
        public ChannelHandler inboundStreamHandler(Channel parent, Object principal) {
            String connectionId = "c" + connectionIds.incrementAndGet();
            parent.attr(CONNECTION_ID).set(connectionId);
            VerifiedToken token = (VerifiedToken) principal;
            ConnectionState state = ConnectionState.of(connectionId, config, token.jti(),
                    parent.attr(TokenAuthenticator.TOKEN).get());
            return StreamAuthorizer.initializer(context, state);
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
            connections.add(parent, verified.jti());
            if (context.revocations().isRevoked(verified.jti())) {
                parent.close(); // revoked between its verification and now: Revocations.revokeGrant may have missed it
                return;
            }
            context.metrics().connectionOpened(parent);
            IdleConnectionReaper.watch(parent, config.limits().connectionIdleTimeout());
            VerifiedToken token = (VerifiedToken) principal;
            context.audit().event(GatewayAuditEvent.CONNECTION_OPENED)
                    .put("conn", parent.attr(CONNECTION_ID).get())
                    .put("env", token.environment())
                    .put("tokenId", token.jti())
                    .put("remote", String.valueOf(parent.remoteAddress()))
                    .write();
            parent.closeFuture().addListener(f -> context.audit().event(GatewayAuditEvent.CONNECTION_CLOSED)
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

    private static final io.netty.util.AttributeKey<String> CONNECTION_ID =
            io.netty.util.AttributeKey.valueOf("ptun.connectionId");

    /** The TCP address this gateway listens on (with port 0: the port picked); not for a Unix socket. */
    public InetSocketAddress address() {
        return (InetSocketAddress) serverChannel.localAddress();
    }

    /** Where this gateway listens: {@code 127.0.0.1:7443}, {@code [::1]:7443} or {@code unix:/path/to.sock}. */
    public String listen() {
        return config.listen() instanceof UnixDomainSocketAddress socket
                ? new UnixSocketPath(socket.getPath()).toString() : ListenAddress.format(address());
    }

    /** True when this gateway listens on a Unix domain socket: it then has no {@link #url} of its own. */
    public boolean onUnixSocket() {
        return config.listen() instanceof UnixDomainSocketAddress;
    }

    private String where(boolean tls) {
        return onUnixSocket() ? listen() + " path " + config.path() : url(tls);
    }

    /** {@code ws://host:port/path} as the ingress should dial it (a TCP listener only). */
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

    /** Revoking grants, tokens and sessions on this gateway (the admin endpoint's revocations). */
    public Revocations revocations() {
        return revocations;
    }

    public int connectionCount() {
        return connections.size();
    }

    public String transportName() {
        return transports.name();
    }

    /** The tunnel connections open right now. */
    public TunnelConnections connections() {
        return connections;
    }

    /** Environment, open tunnel connections and live streams right now. */
    public GatewayStatus status() {
        return new GatewayStatus(config.environment(), connections.size(), context.liveStreams().size());
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
        stopAccepting();
        // GOAWAY on every connection; each closes once its open streams end, within the drain timeout (not the
        // codec's default bound, the keepalive timeout). The codec's own bound is set past ours, so that what is
        // still open at our deadline is reported as cut at the maximum (drain.finish) before it is closed.
        long deadline = System.nanoTime() + config.drainTimeout().toNanos();
        GatewayDrain drain = GatewayDrain.start(context, drainIdle, group.next());
        List<ChannelFuture> drains = new ArrayList<>();
        for (Channel c : connections.all()) {
            context.metrics().connectionDraining(c);
            drains.add(MuxPipeline.closeGracefully(c, config.drainTimeout().plusSeconds(2)));
        }
        for (ChannelFuture drained : drains) {
            drained.awaitUninterruptibly(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
        drain.finish(); // what is still open now is cut at the maximum: said here, closed just below
        // Whatever the drain left open is closed here, not left to the loops' shutdown: with no quiet period
        // Netty 4.2 does not reliably close the channels still registered, and their sockets would stay open.
        connections.closeAll().awaitUninterruptibly(2, TimeUnit.SECONDS);
        context.audit().flushRepeated(true);
        Shutdown.andWait(group);
        blocking.shutdownNow();
    }

    /**
     * Closes the tunnel listener: no new connections, while those open keep running (a replacement may bind the
     * address now). A Unix socket's file goes with it: both transports' domain server channels delete it on close.
     * {@link #close()} begins with it.
     */
    public void stopAccepting() {
        if (serverChannel != null) {
            serverChannel.close().syncUninterruptibly();
        }
    }
}
