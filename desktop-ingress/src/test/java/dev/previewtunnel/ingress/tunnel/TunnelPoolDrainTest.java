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
import dev.previewtunnel.testing.Await;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pool's drain waits for connections the gateway is already draining: after a GOAWAY the slot lets go of its
 * connection, but a stream still running on it must hold the ingress's shutdown as long as the drain allows.
 */
class TunnelPoolDrainTest {
    private static final String ENV = "e1";

    @Test
    void aConnectionTheGatewayIsDrainingHoldsThePoolsDrain(@TempDir Path dir) throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        GrantIssuer issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        GatewayServer gateway = GatewayServer.start(
                GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", 0)).withDrainTimeout(Duration.ofSeconds(30)),
                keys.verificationKeys(), null, new SimpleMeterRegistry());
        SampleApp app = SampleApp.start("127.0.0.1", 0);
        Transports transports = Transports.best();
        EventLoopGroup group = transports.newGroup(1, "drain");
        String token = issuer.issueConnectionToken(ENV, Duration.ofHours(1));
        String grant = issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "localhost", app.port()), Duration.ofMinutes(10));
        TunnelPool pool = new TunnelPool(new TunnelClient(group, transports.socketChannel(), MuxSettings.defaults()),
                group.next(), URI.create(gateway.url(false)), () -> token, null, 1, Duration.ofSeconds(5));
        CompletableFuture<Void> gatewayClosed = null;
        try {
            pool.start().get(10, TimeUnit.SECONDS);
            Http2StreamChannel stream = pool.openStream(new Authority("localhost", app.port()), grant,
                    Duration.ofSeconds(5), group.next()).get(10, TimeUnit.SECONDS);

            // The gateway shuts down gracefully: GOAWAY, then it waits (up to 30 s) for the stream to end.
            gatewayClosed = CompletableFuture.runAsync(gateway::close);
            Await.until("the pool saw the GOAWAY", Duration.ofSeconds(10), () -> pool.status().draining() == 1);

            pool.close(Duration.ofSeconds(30));
            assertFalse(pool.awaitClosed(Duration.ofMillis(300)),
                    "the draining connection still carries a stream: the drain must wait for it");
            stream.close();
            assertTrue(pool.awaitClosed(Duration.ofSeconds(10)), "closed once its last stream ended");
            gatewayClosed.get(30, TimeUnit.SECONDS);
        } finally {
            pool.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
            if (gatewayClosed == null) {
                gateway.close();
            }
            app.close();
        }
    }
}
