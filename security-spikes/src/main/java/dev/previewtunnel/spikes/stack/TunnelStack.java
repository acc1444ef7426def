package dev.previewtunnel.spikes.stack;

import dev.previewtunnel.gateway.GatewayCrash;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.handler.ssl.SslContext;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;

/**
 * The whole chain in one process, for the demo and the end-to-end tests: a key directory, an env-gateway on
 * an ephemeral loopback port and a desktop-ingress with one browser session. Every piece is the real one,
 * talking over real sockets; only the processes are shared.
 */
public final class TunnelStack implements AutoCloseable {
    public static final String ENVIRONMENT = "demo-env";

    private final Path keysDir;
    private final KeyDirectory keys;
    private final GrantIssuer issuer;
    private final String token;
    private GatewayConfig gatewayConfig;
    private Duration gatewayDrainTimeout;
    /** The current gateway was stopped or killed: its event loops are gone, closing it again would fail. */
    private volatile boolean gatewayStopped;
    private GatewayServer gateway;
    private IngressConfig ingressConfig;
    private Ingress ingress;
    private final BrowserSession session = BrowserSession.create("s1");

    private TunnelStack(Path keysDir) throws IOException {
        this.keysDir = keysDir;
        this.keys = KeyDirectory.init(keysDir);
        this.issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        this.token = issuer.issueConnectionToken(ENVIRONMENT, Duration.ofHours(1));
    }

    /** Starts gateway and ingress (pool of {@code poolSize} connections) with no grants yet. */
    public static TunnelStack start(int poolSize) throws IOException, InterruptedException {
        return start(poolSize, null);
    }

    /** As {@link #start(int)}, the gateway draining for up to {@code gatewayDrainTimeout} (null: its default). */
    public static TunnelStack start(int poolSize, Duration gatewayDrainTimeout)
            throws IOException, InterruptedException {
        TunnelStack stack = new TunnelStack(Files.createTempDirectory("ptun-keys"));
        try {
            stack.gatewayDrainTimeout = gatewayDrainTimeout;
            stack.startGateway(new InetSocketAddress("127.0.0.1", 0));
            stack.ingressConfig = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                    URI.create(stack.gateway.url(false))).withPoolSize(poolSize);
            stack.startIngress(stack.ingressConfig);
            return stack;
        } catch (IOException | InterruptedException | RuntimeException e) {
            stack.close(); // the keys directory holds a signing key: not left in /tmp by a failed start
            throw e;
        }
    }

    public void startGateway(InetSocketAddress listen) throws IOException, InterruptedException {
        gatewayConfig = gatewayConfig(listen);
        gateway = GatewayServer.start(gatewayConfig, keys.reloadingVerificationKeys(Clock.systemUTC()), null,
                new SimpleMeterRegistry());
        gatewayStopped = false;
    }

    /**
     * Starts a second gateway for the same environment and keys on an ephemeral loopback port, next to the
     * stack's own (as during a rolling restart). The caller closes it.
     */
    public GatewayServer startAnotherGateway() throws IOException, InterruptedException {
        return GatewayServer.start(gatewayConfig(new InetSocketAddress("127.0.0.1", 0)),
                keys.reloadingVerificationKeys(Clock.systemUTC()), null, new SimpleMeterRegistry());
    }

    private GatewayConfig gatewayConfig(InetSocketAddress listen) {
        GatewayConfig config = GatewayConfig.defaults(ENVIRONMENT, listen);
        return gatewayDrainTimeout == null ? config : config.withDrainTimeout(gatewayDrainTimeout);
    }

    public void startIngress(IngressConfig config) throws InterruptedException {
        startIngress(config, null);
    }

    /** Starts an ingress that trusts the gateway (a {@code wss://} URL in {@code config}) through {@code gatewayTls}. */
    public void startIngress(IngressConfig config, SslContext gatewayTls) throws InterruptedException {
        ingressConfig = config;
        ingress = Ingress.start(config, () -> token, gatewayTls);
        ingress.sessions().add(session);
    }

    /**
     * Stops the running ingress and starts a new one from {@code config} (another listen port, another gateway URL
     * such as a relay, a TLS context for {@code wss://}) with the same browser session: same credential, same
     * grants. Sessions added with {@link #addSession} are not carried over.
     */
    public void restartIngress(IngressConfig config, SslContext gatewayTls) throws InterruptedException {
        if (ingress != null) {
            ingress.close();
            ingress = null;
        }
        startIngress(config, gatewayTls);
    }

    public IngressConfig ingressConfig() {
        return ingressConfig;
    }

    /** Adds another browser session (its own random credential, an empty authority map) to the running ingress. */
    public BrowserSession addSession(String id) {
        return ingress.sessions().add(BrowserSession.create(id));
    }

    /** Issues a grant for {@code host:port} bound to {@code other}'s session id and attaches it to that session. */
    public String grant(BrowserSession other, String host, int port) {
        String g = issuer.issueGrant(GrantSpec.tcp(ENVIRONMENT, other.id(), host, port), Duration.ofMinutes(10));
        other.authorities().add(g);
        return g;
    }

    /** Issues a grant for {@code host:port} to this stack's session and attaches it. Returns the grant. */
    public String grant(String host, int port) {
        String g = issueGrant(host, port, Duration.ofMinutes(10));
        session.authorities().add(g);
        return g;
    }

    public String issueGrant(String host, int port, Duration ttl) {
        return issuer.issueGrant(GrantSpec.tcp(ENVIRONMENT, session.id(), host, port), ttl);
    }

    public GrantIssuer issuer() {
        return issuer;
    }

    public String token() {
        return token;
    }

    public BrowserSession session() {
        return session;
    }

    /** Graceful gateway stop (GOAWAY, streams in flight may finish within the drain timeout). */
    public void stopGateway() {
        gatewayStopped = true;
        gateway.close();
    }

    /** Abrupt gateway stop: every tunnel connection dropped without GOAWAY, as when the process dies. */
    public void killGateway() {
        gatewayStopped = true;
        GatewayCrash.crash(gateway);
    }

    /** Starts a gateway again on the address the previous one had (the ingress keeps its URL). */
    public void restartGatewayOnSameAddress() throws IOException, InterruptedException {
        InetSocketAddress configured = (InetSocketAddress) gatewayConfig.listen(); // this stack listens on TCP
        startGateway(configured.getPort() == 0 ? gateway.address() : configured);
    }

    public GatewayServer gateway() {
        return gateway;
    }

    public Ingress ingress() {
        return ingress;
    }

    public InetSocketAddress proxy() {
        return ingress.proxyAddress();
    }

    public Path keysDir() {
        return keysDir;
    }

    /** Stops both sides and deletes the keys directory (a signing key) even when a stop throws. */
    @Override
    public void close() {
        try {
            if (ingress != null) {
                ingress.close();
            }
            if (gateway != null && !gatewayStopped) {
                gateway.close();
            }
        } finally {
            try (var files = Files.walk(keysDir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
