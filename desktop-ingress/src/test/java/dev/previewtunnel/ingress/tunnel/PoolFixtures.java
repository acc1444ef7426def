package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.mux.Authority;
import dev.previewtunnel.mux.MuxSettings;
import dev.previewtunnel.mux.Transports;
import dev.previewtunnel.mux.TunnelClient;
import dev.previewtunnel.sampleapp.SampleApp;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.EventLoopGroup;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** What the TunnelPool tests share: a pool on its own event loops, and a real gateway with a real target. */
final class PoolFixtures {
    static final String ENV = "e1";

    private PoolFixtures() {
    }

    /** A pool of {@code size} connections to {@code url}, on {@code loops} event loops of its own. */
    static final class Pool implements AutoCloseable {
        final Transports transports = Transports.best();
        final EventLoopGroup group;
        final TunnelPool pool;

        Pool(String name, int loops, URI url, String token, int size, Duration connectTimeout) {
            group = transports.newGroup(loops, name);
            pool = new TunnelPool(new TunnelClient(group, transports.socketChannel(), MuxSettings.defaults()),
                    url, () -> token, null, size, connectTimeout);
        }

        @Override
        public void close() {
            pool.close();
            // As the ingress's own stop does: a connection left to the loops' shutdown can stay open, and a
            // gateway closed next would wait its drain timeout for it.
            pool.closeConnectionsNow();
            pool.awaitClosed(Duration.ofSeconds(5));
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

    /** A real in-process env-gateway (its own keys) and a real target (the sample app), with grants for it. */
    static final class RealGateway implements AutoCloseable {
        final GrantIssuer issuer;
        volatile GatewayServer gateway;
        final SampleApp app;
        private final KeyDirectory keys;
        private final Duration drainTimeout;

        RealGateway(Path dir, Duration drainTimeout) throws Exception {
            keys = KeyDirectory.init(dir.resolve("keys"));
            this.drainTimeout = drainTimeout;
            issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
            gateway = start(0);
            app = SampleApp.start("127.0.0.1", 0);
        }

        private GatewayServer start(int port) throws Exception {
            return GatewayServer.start(
                    GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", port))
                            .withDrainTimeout(drainTimeout),
                    keys.verificationKeys(), null, new SimpleMeterRegistry());
        }

        /** A gateway again on the port of the one a test closed (same keys): a restarted gateway. */
        void restart() throws Exception {
            gateway = start(url().getPort());
        }

        URI url() {
            return URI.create(gateway.url(false));
        }

        String token() {
            return issuer.issueConnectionToken(ENV, Duration.ofHours(1));
        }

        String grant() {
            return issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "localhost", app.port()), Duration.ofMinutes(10));
        }

        Authority target() {
            return new Authority("localhost", app.port());
        }

        /** Closes the gateway (gracefully, unless a test did already) and the target. */
        @Override
        public void close() {
            gateway.close();
            app.close();
        }
    }
}
