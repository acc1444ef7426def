package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.ingress.tunnel.PoolFixtures.Pool;
import dev.previewtunnel.ingress.tunnel.PoolFixtures.RealGateway;
import dev.previewtunnel.mux.wire.Authority;
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
 * A stream goes to a tunnel connection on the event loop of the browser connection that asked for it, unless that
 * connection is more than {@link TunnelPool#LOCAL_SLACK} streams busier than the least-loaded one. Real gateway,
 * real target, real pool of four connections over two event loops.
 */
class TunnelPoolLoopAffinityTest {
    @Test
    void streamsStayOnTheCallersLoopUntilItsConnectionsAreBusierThanTheSlack(@TempDir Path dir) throws Exception {
        List<Http2StreamChannel> streams = new ArrayList<>();
        try (RealGateway real = new RealGateway(dir, Duration.ofMillis(200));
             Pool p = new Pool("affinity", 2, real.url(), real.token(), 4, Duration.ofSeconds(5))) {
            TunnelPool pool = p.pool;
            String grant = real.grant();
            Authority target = real.target();
            try {
                pool.start().get(10, TimeUnit.SECONDS);
                // Slot i connects on loop i modulo 2: two connections per loop.
                Await.until("four tunnel connections", Duration.ofSeconds(10), () -> pool.status().connected() == 4);
                List<EventLoop> loops = new ArrayList<>();
                for (EventExecutor e : p.group) {
                    loops.add((EventLoop) e);
                }
                EventLoop first = loops.get(0);
                EventLoop second = loops.get(1);

                // Equal loads: each caller's stream stays on its own loop (connections {1,0} on each loop after this).
                for (EventLoop caller : loops) {
                    Http2StreamChannel s = open(pool, target, grant, caller);
                    streams.add(s);
                    assertSame(caller, s.eventLoop(), "a stream on an idle pool runs on the caller's loop");
                }
                // From the first loop only: its two connections take streams until the less loaded of them carries
                // more than LOCAL_SLACK streams above the least-loaded connection of the pool (0, on the other
                // loop): {1,0} -> {9,9} is 17 opens; the 18th goes to the other loop.
                int local = 2 * (TunnelPool.LOCAL_SLACK + 1) - 1;
                for (int i = 0; i < local; i++) {
                    Http2StreamChannel s = open(pool, target, grant, first);
                    streams.add(s);
                    assertSame(first, s.eventLoop(), "open " + (i + 1) + " of " + local + " stays on the caller's loop");
                }
                Http2StreamChannel spilled = open(pool, target, grant, first);
                streams.add(spilled);
                assertSame(second, spilled.eventLoop(),
                        "once the caller's connections are more than the slack busier, the least-loaded one is used");
                assertEquals(streams.size(), pool.status().liveStreams());
            } finally {
                for (Http2StreamChannel s : streams) {
                    s.close();
                }
            }
        }
    }

    private static Http2StreamChannel open(TunnelPool pool, Authority target, String grant, EventLoop caller)
            throws Exception {
        return pool.openStream(target, grant, Duration.ofSeconds(5), caller).get(10, TimeUnit.SECONDS);
    }
}
