package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.ingress.tunnel.PoolFixtures.Pool;
import dev.previewtunnel.ingress.tunnel.PoolFixtures.RealGateway;
import dev.previewtunnel.testing.Await;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
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
    @Test
    void aConnectionTheGatewayIsDrainingHoldsThePoolsDrain(@TempDir Path dir) throws Exception {
        try (RealGateway real = new RealGateway(dir, Duration.ofSeconds(30));
             Pool p = new Pool("drain", 1, real.url(), real.token(), 1, Duration.ofSeconds(5))) {
            TunnelPool pool = p.pool;
            pool.start().get(10, TimeUnit.SECONDS);
            Http2StreamChannel stream = pool.openStream(real.target(), real.grant(), Duration.ofSeconds(5),
                    p.group.next()).get(10, TimeUnit.SECONDS);

            // The gateway shuts down gracefully: GOAWAY, then it waits (up to 30 s) for the stream to end.
            CompletableFuture<Void> gatewayClosed = CompletableFuture.runAsync(real.gateway::close);
            Await.until("the pool saw the GOAWAY", Duration.ofSeconds(10), () -> pool.status().draining() == 1);

            pool.close(Duration.ofSeconds(30));
            assertFalse(pool.awaitClosed(Duration.ofMillis(300)),
                    "the draining connection still carries a stream: the drain must wait for it");
            stream.close();
            assertTrue(pool.awaitClosed(Duration.ofSeconds(10)), "closed once its last stream ended");
            gatewayClosed.get(30, TimeUnit.SECONDS);
        }
    }
}
