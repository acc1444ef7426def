package dev.previewtunnel.ingress;

import dev.previewtunnel.ingress.proxy.IngressContext;
import dev.previewtunnel.ingress.proxy.ProxyServer;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.mux.Transports;
import dev.previewtunnel.mux.TunnelClient;
import dev.previewtunnel.mux.audit.AuditLog;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The desktop side, assembled: the authenticating forward proxy browsers use, the browser sessions it
 * recognises, and the pool of tunnel connections to one environment gateway.
 */
public final class Ingress implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Ingress.class);

    private final IngressConfig config;
    private final Transports transports = Transports.best();
    private final EventLoopGroup group;
    private final SessionRegistry sessions = new SessionRegistry();
    private final TunnelPool pool;
    private final ProxyServer proxy;

    private Ingress(IngressConfig config, Supplier<String> token, SslContext gatewayTls) throws InterruptedException {
        this.config = config;
        this.group = transports.newGroup(config.ioThreads(), "ptun-ingress");
        TunnelClient client = new TunnelClient(group, transports.socketChannel(), config.mux());
        this.pool = new TunnelPool(client, group.next(), config.gateway(), token, gatewayTls, config.poolSize(),
                config.connectTimeout());
        IngressContext context = new IngressContext(config, sessions, pool, new AuditLog("ingress"));
        try {
            this.proxy = new ProxyServer(group, transports, context);
        } catch (InterruptedException | RuntimeException e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e;
        }
    }

    /**
     * Starts the proxy and begins connecting the pool. Does not wait for the gateway: while it is unreachable,
     * browsers get a prompt 502 page and the pool keeps retrying.
     */
    public static Ingress start(IngressConfig config, Supplier<String> token, SslContext gatewayTls)
            throws InterruptedException {
        Ingress ingress = new Ingress(config, token, gatewayTls);
        ingress.pool.start();
        log.info("ingress proxy on {} (transport {}), gateway {}", ingress.proxy.address(),
                ingress.transports.name(), config.gateway().getHost() + ":" + config.gateway().getPort());
        return ingress;
    }

    public InetSocketAddress proxyAddress() {
        return proxy.address();
    }

    public SessionRegistry sessions() {
        return sessions;
    }

    public TunnelPool pool() {
        return pool;
    }

    public IngressConfig config() {
        return config;
    }

    public String transportName() {
        return transports.name();
    }

    @Override
    public void close() {
        proxy.close();
        pool.close();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
}
