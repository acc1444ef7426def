package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.ingress.tunnel.PoolFixtures.Pool;
import dev.previewtunnel.ingress.tunnel.PoolFixtures.RealGateway;
import dev.previewtunnel.mux.TunnelError;
import dev.previewtunnel.mux.TunnelStreamException;
import dev.previewtunnel.testing.Await;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The price of loop affinity: a stream asked for while its loop's connections reconnect waits for them rather than
 * going to another loop. It is served once they are back, on its own loop, within its open timeout; when they do
 * not come back in time it fails with GATEWAY_UNREACHABLE, which the proxy answers with its 502 page.
 */
class TunnelPoolReconnectWaitTest {
    @Test
    void anOpenWhileItsLoopReconnectsIsServedOnceTheGatewayIsBack(@TempDir Path dir) throws Exception {
        try (RealGateway real = new RealGateway(dir, Duration.ofMillis(200));
             Pool p = new Pool("reconnect-wait", 2, real.url(), real.token(), 2, Duration.ofSeconds(5))) {
            TunnelPool pool = p.pool;
            String grant = real.grant();
            upThenGatewayGone(real, pool);
            EventLoop caller = p.group.next();
            Future<Http2StreamChannel> open = pool.openStream(real.target(), grant, Duration.ofSeconds(20), caller);
            // Down for a while: the open waits (no connection to take), it does not fail.
            assertFalse(open.await(500, TimeUnit.MILLISECONDS), "waits while its loop reconnects");

            real.restart();
            assertTrue(open.await(20, TimeUnit.SECONDS), "settles once the gateway is back, within the open timeout");
            assertTrue(open.isSuccess(), () -> "served: " + open.cause());
            Http2StreamChannel stream = open.getNow();
            try {
                assertSame(caller, stream.eventLoop(), "on the caller's own loop");
                assertEquals(1, pool.status().liveStreams());
            } finally {
                stream.close();
            }
        }
    }

    @Test
    void anOpenWhoseLoopNeverReconnectsFailsAtItsOpenTimeout(@TempDir Path dir) throws Exception {
        try (RealGateway real = new RealGateway(dir, Duration.ofMillis(200));
             Pool p = new Pool("reconnect-never", 2, real.url(), real.token(), 2, Duration.ofSeconds(5))) {
            TunnelPool pool = p.pool;
            String grant = real.grant();
            upThenGatewayGone(real, pool);
            long start = System.nanoTime();
            Future<Http2StreamChannel> open = pool.openStream(real.target(), grant, Duration.ofMillis(500),
                    p.group.next());
            assertTrue(open.await(10, TimeUnit.SECONDS), "no hang");
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            TunnelStreamException e = assertInstanceOf(TunnelStreamException.class, open.cause());
            assertEquals(TunnelError.GATEWAY_UNREACHABLE, e.error());
            assertTrue(e.getMessage().contains("environment gateway unreachable since "), e.getMessage());
            assertTrue(e.getMessage().endsWith(", retrying"), e.getMessage());
            assertTrue(tookMillis >= 450 && tookMillis < 5_000, "gave up after " + tookMillis + " ms");
        }
    }

    /** A connection on each of the pool's two loops, then the gateway closed: both loops reconnecting. */
    private static void upThenGatewayGone(RealGateway real, TunnelPool pool) throws Exception {
        pool.start().get(10, TimeUnit.SECONDS);
        Await.until("a connection on each loop", Duration.ofSeconds(10), () -> pool.status().connected() == 2);
        real.gateway.close();
        Await.until("both loops reconnecting", Duration.ofSeconds(10), () -> pool.status().connected() == 0);
    }
}
