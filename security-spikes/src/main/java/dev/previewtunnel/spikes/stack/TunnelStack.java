package dev.previewtunnel.spikes.stack;

import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

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
        TunnelStack stack = new TunnelStack(Files.createTempDirectory("ptun-keys"));
        stack.startGateway(new InetSocketAddress("127.0.0.1", 0));
        stack.ingressConfig = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create(stack.gateway.url(false))).withPoolSize(poolSize);
        stack.startIngress(stack.ingressConfig);
        return stack;
    }

    public void startGateway(InetSocketAddress listen) throws IOException, InterruptedException {
        gatewayConfig = GatewayConfig.defaults(ENVIRONMENT, listen);
        gateway = GatewayServer.start(gatewayConfig, keys.reloadingVerificationKeys(Clock.systemUTC()), null,
                new SimpleMeterRegistry());
    }

    public void startIngress(IngressConfig config) throws InterruptedException {
        ingressConfig = config;
        ingress = Ingress.start(config, () -> token, null);
        ingress.sessions().add(session);
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

    @Override
    public void close() {
        if (ingress != null) {
            ingress.close();
        }
        if (gateway != null) {
            gateway.close();
        }
        try (var files = Files.walk(keysDir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
