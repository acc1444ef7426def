package dev.previewtunnel.ingress;

import dev.previewtunnel.local.shutdown.Shutdown;
import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.ingress.proxy.DirectDialer;
import dev.previewtunnel.ingress.proxy.IngressContext;
import dev.previewtunnel.ingress.proxy.ProxyServer;
import dev.previewtunnel.ingress.refresh.GrantRefresher;
import dev.previewtunnel.ingress.session.AuthorityMap;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.status.FrontDoor;
import dev.previewtunnel.ingress.tunnel.EnvironmentGateway;
import dev.previewtunnel.ingress.tunnel.EnvironmentPools;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.local.http.LocalApi;
import dev.previewtunnel.local.http.LocalHttpServer;
import dev.previewtunnel.mux.relay.Transports;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The desktop side, assembled: the authenticating forward proxy browsers use, the browser sessions it
 * recognises, and the pools of tunnel connections: one to the default gateway and one to each environment that
 * has a gateway of its own ({@link EnvironmentPools}).
 */
public final class Ingress implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Ingress.class);
    /** During a drain, a browser connection that moves no bytes for this long is closed ({@code --drain-idle-timeout}). */
    public static final Duration DEFAULT_DRAIN_IDLE = Duration.ofSeconds(2);

    private final IngressConfig config;
    private final Transports transports = Transports.best();
    private final EventLoopGroup group;
    private final SessionRegistry sessions = new SessionRegistry();
    private final EnvironmentPools pools;
    private final Map<String, EnvironmentGateway> environmentGateways;
    private final ProxyServer proxy;
    private final IngressContext context;
    private volatile String virtualHostSuffix = AuthorityMap.DEFAULT_SUFFIX;
    private volatile Future<Void> firstConnection;
    private final IngressMetrics metrics;
    private final java.util.concurrent.atomic.AtomicBoolean closing = new java.util.concurrent.atomic.AtomicBoolean();

    private Ingress(IngressConfig config, Supplier<String> token, SslContext gatewayTls, MeterRegistry registry,
                    Map<String, EnvironmentGateway> environments) throws InterruptedException {
        this.config = config;
        this.group = transports.newGroup(config.ioThreads(), "ptun-ingress");
        FatalErrors.watch(group, closing::get); // a loop that dies unasked ends the process (when installed)
        this.environmentGateways = Collections.unmodifiableMap(new LinkedHashMap<>(environments));
        TunnelClient client = new TunnelClient(group, transports.socketChannel(), config.mux());
        // One slice of each pool per loop of this group, the group the browser connections run on too.
        TunnelPool defaultPool = new TunnelPool(client, config.gateway(), token, gatewayTls, config.poolSize(),
                config.connectTimeout());
        this.pools = new EnvironmentPools(defaultPool, environments, g -> new TunnelPool(client, g.url(), g.token(),
                gatewayTls, config.poolSize(), config.connectTimeout()));
        this.metrics = registry == null ? null : new IngressMetrics(registry, defaultPool);
        if (metrics != null) {
            pools.byEnvironment().forEach(metrics::environmentPool);
        }
        pools.streamObserver(metrics);
        this.context = new IngressContext(config, sessions, pools, new AuditLog("ingress"),
                DirectDialer.standard(config.connectTimeout()));
        // Summaries of repeated refusals are written when their window ends, and at close.
        group.next().scheduleAtFixedRate(() -> context.audit().flushRepeated(false), 1, 1, TimeUnit.SECONDS);
        try {
            this.proxy = new ProxyServer(group, transports, context);
        } catch (Throwable e) {
            // Netty rethrows a failed bind (BindException, checked) without declaring it: catch everything,
            // free the event loops, and rethrow the very same exception.
            Shutdown.begin(group);
            io.netty.util.internal.PlatformDependent.throwException(e);
            throw new AssertionError(e);
        }
    }

    /**
     * Starts the proxy and begins connecting the pool. Does not wait for the gateway: while it is unreachable,
     * browsers get a prompt 502 page and the pool keeps retrying.
     */
    public static Ingress start(IngressConfig config, Supplier<String> token, SslContext gatewayTls)
            throws InterruptedException {
        return start(config, token, gatewayTls, null);
    }

    /** As {@link #start(IngressConfig, Supplier, SslContext)}, recording {@link IngressMetrics} in {@code registry}. */
    public static Ingress start(IngressConfig config, Supplier<String> token, SslContext gatewayTls,
                                MeterRegistry registry) throws InterruptedException {
        return start(config, token, gatewayTls, registry, Map.of());
    }

    /**
     * As {@link #start(IngressConfig, Supplier, SslContext, MeterRegistry)}, with gateways of their own for some
     * environments: a stream under a grant for one of them goes to that gateway with that gateway's token; every
     * other environment's streams go to {@code config.gateway()} with {@code token}. {@code gatewayTls} (null for
     * the JDK's trust store) applies to every {@code wss://} gateway.
     */
    public static Ingress start(IngressConfig config, Supplier<String> token, SslContext gatewayTls,
                                MeterRegistry registry, Map<String, EnvironmentGateway> environments)
            throws InterruptedException {
        Ingress ingress = new Ingress(config, token, gatewayTls, registry, environments);
        ingress.firstConnection = ingress.pools.start();
        log.info("ingress proxy on {} (transport {}), gateway {}", ingress.proxy.address(),
                ingress.transports.name(), config.gateway().getHost() + ":" + config.gateway().getPort());
        environments.forEach((environment, gateway) ->
                log.info("environment {} has its own gateway {}", environment, gateway.shown()));
        return ingress;
    }

    public InetSocketAddress proxyAddress() {
        return proxy.address();
    }

    public SessionRegistry sessions() {
        return sessions;
    }

    /**
     * Removes a closed session: from the registry, and its last errors from the status page's memory, so a new
     * session that takes the same id starts with none.
     */
    public Optional<BrowserSession> removeSession(String id) {
        context.recentErrors().forget(id);
        return sessions.remove(id);
    }

    /** The pool to the default gateway ({@code config().gateway()}). */
    public TunnelPool pool() {
        return pools.defaultPool();
    }

    /** Every pool: the default one and those of the environments with a gateway of their own. */
    public EnvironmentPools pools() {
        return pools;
    }

    /** The environments with a gateway of their own, in the order given. */
    public Map<String, EnvironmentGateway> environmentGateways() {
        return environmentGateways;
    }

    /**
     * Completes when the default pool's first connection attempt settles: success once a tunnel connection is
     * up, failure (with that attempt's error) if one fails first. The pool keeps retrying either way; this is for
     * reporting. The other pools' are in {@link EnvironmentPools#firstConnections()}.
     */
    public Future<Void> firstConnection() {
        return firstConnection;
    }

    public IngressConfig config() {
        return config;
    }

    public String transportName() {
        return transports.name();
    }

    /** Sets (or clears, with null) the hook asked for a new grant when one expired or was revoked. */
    public void grantRefresher(GrantRefresher refresher) {
        context.refresher().set(refresher);
    }

    /**
     * Sets what {@code desktop-ingress open} adds to the status page ({@code http://preview.localhost/}) and to the
     * error pages (null: the ingress's own facts and generic fixes). Read on the event loops: answers fast, no I/O.
     */
    public void frontDoor(FrontDoor frontDoor) {
        context.frontDoor().set(frontDoor);
    }

    /** The virtual-host suffix for sessions created from now on ({@code preview.localhost} by default). */
    public String virtualHostSuffix() {
        return virtualHostSuffix;
    }

    /** Sets the suffix (see {@link AuthorityMap#isValidSuffix}) for sessions created from now on. */
    public void virtualHostSuffix(String suffix) {
        if (!AuthorityMap.isValidSuffix(suffix)) {
            throw new IllegalArgumentException("not a virtual-host suffix: lower-case DNS labels expected");
        }
        this.virtualHostSuffix = suffix;
    }

    /** Binds a loopback HTTP+JSON API on this ingress's event loops (the control API). */
    public io.netty.channel.Channel bindLocalApi(InetSocketAddress listen, String token, LocalApi.Handler handler)
            throws InterruptedException {
        return bindLocalApi(listen, token, (method, path, body) -> java.util.concurrent.CompletableFuture
                .completedFuture(handler.handle(method, path, body)), LocalHttpServer.Limits.defaults());
    }

    /** As above, with answers that may complete later and the request deadline and connection cap of {@code limits}. */
    public io.netty.channel.Channel bindLocalApi(InetSocketAddress listen, String token,
                                                 LocalApi.DeferringHandler handler, LocalHttpServer.Limits limits)
            throws InterruptedException {
        return LocalApi.bindDeferring(group, transports.serverSocketChannel(), listen, token,
                "preview-tunnel-control", handler, limits);
    }

    /** The browser listener's connection budget (open, unauthenticated and refused counts). */
    public dev.previewtunnel.local.net.ConnectionBudget browserBudget() {
        return proxy.budget();
    }

    /** The metrics of this ingress, or null when started without a registry. */
    public IngressMetrics metrics() {
        return metrics;
    }

    @Override
    public void close() {
        close(Duration.ZERO);
    }

    /** {@link #close(Duration, Duration)} with the default idle cut, {@link #DEFAULT_DRAIN_IDLE}. */
    public void close(Duration drain) {
        close(drain, DEFAULT_DRAIN_IDLE);
    }

    /**
     * Graceful, bounded stop: no new browser connections; every tunnel connection of every pool sends GOAWAY and
     * closes once its live streams have ended, and what they relayed is written to the browsers, all waited for
     * within one {@code drain}; a browser connection that moves no bytes for {@code idle} meanwhile is closed
     * early ({@link IngressDrain}); then whatever is left is closed.
     */
    public void close(Duration drain, Duration idle) {
        if (!closing.compareAndSet(false, true)) {
            return; // stopped already (its event loops are gone): a second close has nothing to do
        }
        proxy.close();
        long deadline = System.nanoTime() + drain.toNanos();
        // By activity: browser connections moving bytes go on up to the maximum, idle ones are closed early. The
        // tunnels' own bound is set past ours so that what is open at our deadline is reported before it is cut.
        IngressDrain watch = drain.isZero() ? null : IngressDrain.start(proxy::browsers, idle, group.next());
        pools.close(drain.isZero() ? drain : drain.plusSeconds(2));
        if (!drain.isZero() && !(pools.awaitClosed(drain)
                && proxy.awaitWritten(Duration.ofNanos(Math.max(0, deadline - System.nanoTime()))))) {
            log.info("drain timeout ({} ms) reached with streams still open; closing them", drain.toMillis());
        }
        if (watch != null) {
            watch.finish();
        }
        // Close what is left ourselves: the loops' shutdown (no quiet period) does not reliably close the channels
        // still registered, and a socket left open would hold its peer (gateway, browser) until an idle timeout.
        pools.closeRemaining(Duration.ofSeconds(2));
        proxy.closeBrowsers(Duration.ofSeconds(2));
        context.audit().flushRepeated(true);
        Shutdown.andWait(group);
    }
}
