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
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.EventExecutor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
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
    private static final String ENV = "e1";

    @Test
    void streamsStayOnTheCallersLoopUntilItsConnectionsAreBusierThanTheSlack(@TempDir Path dir) throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        GrantIssuer issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        GatewayServer gateway = GatewayServer.start(
                GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", 0)).withDrainTimeout(Duration.ofMillis(200)),
                keys.verificationKeys(), null, new SimpleMeterRegistry());
        SampleApp app = SampleApp.start("127.0.0.1", 0);
        Transports transports = Transports.best();
        EventLoopGroup group = transports.newGroup(2, "affinity");
        String token = issuer.issueConnectionToken(ENV, Duration.ofHours(1));
        String grant = issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "localhost", app.port()), Duration.ofMinutes(10));
        Authority target = new Authority("localhost", app.port());
        TunnelPool pool = new TunnelPool(new TunnelClient(group, transports.socketChannel(), MuxSettings.defaults()),
                group.next(), URI.create(gateway.url(false)), () -> token, null, 4, Duration.ofSeconds(5));
        List<Http2StreamChannel> streams = new ArrayList<>();
        try {
            pool.start().get(10, TimeUnit.SECONDS);
            // Slot i connects on loop i modulo 2: two connections per loop.
            Await.until("four tunnel connections", Duration.ofSeconds(10), () -> pool.status().connected() == 4);
            List<EventLoop> loops = new ArrayList<>();
            for (EventExecutor e : group) {
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
            // more than LOCAL_SLACK streams above the least-loaded connection of the pool (0, on the other loop):
            // {1,0} -> {9,9} is 17 opens; the 18th goes to the other loop.
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
            pool.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
            gateway.close();
            app.close();
        }
    }

    private static Http2StreamChannel open(TunnelPool pool, Authority target, String grant, EventLoop caller)
            throws Exception {
        return pool.openStream(target, grant, Duration.ofSeconds(5), caller).get(10, TimeUnit.SECONDS);
    }
}
