package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.ingress.tunnel.PoolFixtures.Pool;
import dev.previewtunnel.ingress.tunnel.PoolFixtures.RealGateway;
import dev.previewtunnel.mux.Authority;
import dev.previewtunnel.testing.Await;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.EventExecutor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

/**
 * A stream always goes to a tunnel connection on the event loop of the browser connection that asked for it, however
 * busy that loop's connections are, so a relay's two sides share one loop; and every loop has a connection of its
 * own, whatever the configured size. Real gateway, real target, real pools over two event loops.
 */
class TunnelPoolLoopAffinityTest {
    @Test
    void streamsStayOnTheCallersLoopHoweverBusyItsConnectionsAre(@TempDir Path dir) throws Exception {
        List<Http2StreamChannel> streams = new ArrayList<>();
        try (RealGateway real = new RealGateway(dir, Duration.ofMillis(200));
             Pool p = new Pool("affinity", 2, real.url(), real.token(), 4, Duration.ofSeconds(5))) {
            TunnelPool pool = p.pool;
            String grant = real.grant();
            Authority target = real.target();
            try {
                started(pool, 4); // two connections on each loop
                List<EventLoop> loops = loops(p);
                EventLoop first = loops.get(0);
                EventLoop second = loops.get(1);

                for (EventLoop caller : loops) {
                    Http2StreamChannel s = open(pool, target, grant, caller);
                    streams.add(s);
                    assertSame(caller, s.eventLoop(), "a stream on an idle pool runs on the caller's loop");
                }
                // From the first loop only, far past any spread: every stream stays on the caller's loop, and the
                // other loop's connections keep the one stream opened from there.
                for (int i = 0; i < 20; i++) {
                    Http2StreamChannel s = open(pool, target, grant, first);
                    streams.add(s);
                    assertSame(first, s.eventLoop(), "open " + (i + 1) + " stays on the caller's loop");
                }
                Http2StreamChannel fromSecond = open(pool, target, grant, second);
                streams.add(fromSecond);
                assertSame(second, fromSecond.eventLoop(), "the other loop's opens stay on their own loop too");
                // Slot order, loop by loop: the first loop's two connections share 21 streams, the second's two
                // carry 2, one each (least-loaded within the loop).
                List<Integer> perConnection = pool.liveStreamsPerConnection();
                assertEquals(21, perConnection.get(0) + perConnection.get(1), perConnection.toString());
                assertEquals(List.of(1, 1), perConnection.subList(2, 4));
                assertEquals(streams.size(), pool.status().liveStreams());
            } finally {
                for (Http2StreamChannel s : streams) {
                    s.close();
                }
            }
        }
    }

    @Test
    void aPoolSmallerThanTheLoopsStillKeepsAConnectionOnEachLoop(@TempDir Path dir) throws Exception {
        List<Http2StreamChannel> streams = new ArrayList<>();
        try (RealGateway real = new RealGateway(dir, Duration.ofMillis(200));
             Pool p = new Pool("affinity-small", 2, real.url(), real.token(), 1, Duration.ofSeconds(5))) {
            TunnelPool pool = p.pool;
            try {
                started(pool, 2); // one connection per loop
                assertEquals(2, pool.status().size(), "max(size 1, 2 loops)");
                for (EventLoop caller : loops(p)) {
                    Http2StreamChannel s = open(pool, real.target(), real.grant(), caller);
                    streams.add(s);
                    assertSame(caller, s.eventLoop());
                }
            } finally {
                for (Http2StreamChannel s : streams) {
                    s.close();
                }
            }
        }
    }

    private static void started(TunnelPool pool, int connections) throws Exception {
        pool.start().get(10, TimeUnit.SECONDS);
        Await.until(connections + " tunnel connections", Duration.ofSeconds(10),
                () -> pool.status().connected() == connections);
    }

    private static List<EventLoop> loops(Pool p) {
        List<EventLoop> loops = new ArrayList<>();
        for (EventExecutor e : p.group) {
            loops.add((EventLoop) e);
        }
        return loops;
    }

    private static Http2StreamChannel open(TunnelPool pool, Authority target, String grant, EventLoop caller)
            throws Exception {
        return pool.openStream(target, grant, Duration.ofSeconds(5), caller).get(10, TimeUnit.SECONDS);
    }
}
