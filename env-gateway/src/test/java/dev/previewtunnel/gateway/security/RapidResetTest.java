package dev.previewtunnel.gateway.security;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.GatewayLimits;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.codec.MuxPipeline;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.sampleapp.RawEchoServer;
import dev.previewtunnel.testing.Await;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http2.DefaultHttp2PingFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2GoAwayFrame;
import io.netty.handler.codec.http2.Http2PingFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamChannelBootstrap;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * HTTP/2 rapid reset (CVE-2023-44487) against the gateway, bounded in count and time.
 *
 * <p>(a) One authenticated connection opens streams with a valid grant and resets each one at once (HEADERS
 * then RST_STREAM CANCEL: the child channel is closed right after the CONNECT is written), at most 2,500. The
 * gateway's HTTP/2 codec counts RST_STREAM frames received for live streams ({@code MuxSettings.maxRstPerWindow},
 * 2,000 per 30 s) and closes the connection with GOAWAY {@code ENHANCE_YOUR_CALM} on the first one over. The
 * GOAWAY is asserted on the wire, through a recording TCP tap ({@link TcpTap}). A second connection opened before
 * the flood keeps working, dials are bounded by the per-session token bucket, and no live stream is left behind.
 *
 * <p>(b) A page load that opens 300 streams and aborts each after its 200 answer is far inside both limits and
 * keeps its connection.
 */
class RapidResetTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Upper bound of the flood: the gateway must close the connection before this many streams. */
    private static final int MAX_STREAMS = 2_500;
    private static final int BATCH = 25;

    @TempDir
    Path dir;

    SecurityFixture fixture;
    RawEchoServer echo;

    @BeforeEach
    void start() throws Exception {
        echo = RawEchoServer.start("127.0.0.1", 0);
        fixture = SecurityFixture.start(dir, c -> c);
    }

    @AfterEach
    void stop() {
        fixture.close();
        echo.close();
    }

    /** The flood's stream handler: drops whatever the gateway answers on a stream the client already reset. */
    @ChannelHandler.Sharable
    static final class Discard extends ChannelInboundHandlerAdapter {
        static final Discard INSTANCE = new Discard();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
        }
    }

    /** Records the error code of a GOAWAY the gateway sends on a connection. */
    static final class GoAwayRecorder extends ChannelInboundHandlerAdapter {
        volatile Long errorCode;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Http2GoAwayFrame goAway && errorCode == null) {
                errorCode = goAway.errorCode();
            }
            ctx.fireChannelRead(msg);
        }
    }

    static GoAwayRecorder watchGoAway(TunnelConnection connection) throws Exception {
        GoAwayRecorder recorder = new GoAwayRecorder();
        Channel parent = connection.channel();
        parent.eventLoop().submit(() -> parent.pipeline().addBefore("ptun-connection", "test-goaway", recorder))
                .get(5, TimeUnit.SECONDS);
        return recorder;
    }

    private Authority target() {
        return new Authority("127.0.0.1", echo.port());
    }

    /** Sees PING acks before the keepalive handler swallows them: a round trip proves the gateway read all before. */
    static final class PingAcks extends ChannelInboundHandlerAdapter {
        final java.util.Set<Long> acked = java.util.concurrent.ConcurrentHashMap.newKeySet();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Http2PingFrame ping && ping.ack()) {
                acked.add(ping.content());
            }
            ctx.fireChannelRead(msg);
        }
    }

    /**
     * Opens {@code count} streams with {@code grant} and resets each at once, then writes a PING with
     * {@code pingNonce}: one event-loop task, one flush, so the gateway reads the batch and the PING together.
     */
    private static void openAndReset(Channel parent, Http2StreamChannelBootstrap bootstrap, Authority target,
                                     String grant, int count, AtomicInteger resets, AtomicInteger failures,
                                     long pingNonce) throws Exception {
        parent.eventLoop().submit(() -> {
            for (int i = 0; i < count; i++) {
                bootstrap.open().addListener(f -> {
                    if (!f.isSuccess()) {
                        failures.incrementAndGet();
                        return;
                    }
                    Http2StreamChannel s = (Http2StreamChannel) f.getNow();
                    s.write(ConnectHeaders.connect(target, grant));
                    // Closing an open stream writes RST_STREAM(CANCEL): the rapid-reset pattern.
                    s.close().addListener(c -> resets.incrementAndGet());
                });
            }
            parent.write(new DefaultHttp2PingFrame(pingNonce));
            parent.flush();
        }).get(10, TimeUnit.SECONDS);
    }

    @Test
    void floodOfImmediatelyResetStreamsClosesThatConnectionOnly() throws Exception {
        MuxSettings mux = fixture.config.mux();
        GatewayLimits limits = fixture.config.limits();
        int limit = mux.maxRstPerWindow();
        TunnelConnection bystander = fixture.connect();
        // The attacker's connection goes through a recording TCP tap, to see the GOAWAY on the wire (see below).
        TcpTap tap = new TcpTap(fixture.gateway.address());
        TunnelConnection attacker = fixture.client().connect(URI.create("ws://127.0.0.1:" + tap.port() + "/tunnel"),
                fixture.token, null, Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
        GoAwayRecorder attackerGoAway = watchGoAway(attacker);
        GoAwayRecorder bystanderGoAway = watchGoAway(bystander);
        Channel parent = attacker.channel();
        PingAcks acks = new PingAcks();
        parent.eventLoop().submit(() -> parent.pipeline().addAfter(MuxPipeline.CODEC, "test-ping-acks", acks))
                .get(5, TimeUnit.SECONDS);
        String floodGrant = fixture.grant("s-flood", "127.0.0.1", echo.port());
        String bystanderGrant = fixture.grant("s-bystander", "127.0.0.1", echo.port());

        long dialsBefore = fixture.gateway.metrics().dialAttempts();
        int targetsBefore = echo.acceptedConnections();
        Http2StreamChannelBootstrap bootstrap = new Http2StreamChannelBootstrap(parent).handler(Discard.INSTANCE);
        AtomicInteger resets = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        long start = System.nanoTime();

        // Batches of 25, each written with a PING in the same flush; the next batch waits for the PING's ack, so the
        // gateway has read everything before it when it hits the limit, and the count at close is exact.
        int sent = 0;
        long nonce = 0;
        while (sent < MAX_STREAMS && parent.isActive()) {
            long n = ++nonce;
            openAndReset(parent, bootstrap, target(), floodGrant, BATCH, resets, failures, n);
            sent += BATCH;
            Await.until("PING ack (or close) after " + sent + " streams", Duration.ofSeconds(10),
                    () -> acks.acked.contains(n) || !parent.isActive());
        }
        assertTrue(parent.closeFuture().await(10, TimeUnit.SECONDS),
                "gateway closes the flooding connection before " + MAX_STREAMS + " streams");
        long floodMillis = (System.nanoTime() - start) / 1_000_000;
        // What the gateway sent before closing, decoded from the wire: WebSocket frames -> HTTP/2 frames -> GOAWAY.
        // (The client application usually sees it too, via the recorder on its pipeline; but the gateway closes
        // with the client's last frames unread, so its kernel answers them with a TCP reset, and a client whose
        // next write then fails with EPIPE drops the connection before reading the GOAWAY already received.)
        long wireGoAway = TcpTap.goAwayErrorCode(tap.serverBytes(10, TimeUnit.SECONDS));
        tap.close();
        assertEquals(Http2Error.ENHANCE_YOUR_CALM.code(), wireGoAway,
                "the gateway ends the flooding connection with GOAWAY ENHANCE_YOUR_CALM");
        assertTrue(attackerGoAway.errorCode == null || attackerGoAway.errorCode == Http2Error.ENHANCE_YOUR_CALM.code(),
                "if the client read a GOAWAY, it is ENHANCE_YOUR_CALM: " + attackerGoAway.errorCode);
        // Every batch up to the limit was answered (its PING acked), and the gateway closed on the batch that
        // crossed it: the first reset over the limit.
        assertTrue(resets.get() > limit, "the connection was served up to the limit: " + resets.get() + " resets");
        assertTrue(resets.get() <= limit + BATCH, "closed within the RST budget: " + resets.get() + " streams reset");

        // The process keeps serving: the bystander connection opened before the flood still moves bytes.
        assertTrue(bystander.isUsable(), "bystander connection unaffected");
        assertNull(bystanderGoAway.errorCode, "no GOAWAY on the bystander connection");
        Http2StreamChannel s = SecurityFixture.open(bystander, target(), bystanderGrant);
        byte[] payload = "still serving".repeat(1000).getBytes(StandardCharsets.US_ASCII);
        assertEquals(payload.length + "\n", SecurityFixture.exchange(s, payload));
        // ...and new connections are still accepted.
        TunnelConnection fresh = fixture.connect();
        Http2StreamChannel s2 = SecurityFixture.open(fresh, target(), bystanderGrant);
        assertEquals("3\n", SecurityFixture.exchange(s2, "new".getBytes(StandardCharsets.US_ASCII)));

        // Memory bounded: nothing of the flood stays registered.
        Await.until("no live stream left", Duration.ofSeconds(10), () -> fixture.gateway.liveStreams().size() == 0);
        // Dials bounded by the flooding session's token bucket (burst + rate x duration), not by the flood size.
        long dials = fixture.gateway.metrics().dialAttempts() - dialsBefore - 2; // minus the two bystander streams
        long allowed = limits.openBurst() + (long) Math.ceil(limits.opensPerSecond() * (floodMillis / 1000.0 + 1));
        // Dials are bounded twice: by the session's token bucket (burst + rate x duration) and by the RST budget of
        // the connection (the gateway reads no stream after the one that crossed it).
        assertTrue(dials <= allowed, "flood dials " + dials + " must stay within the session budget " + allowed);
        assertTrue(dials <= limit + 1, "flood dials " + dials + " must stay within the RST budget " + (limit + 1));
        Await.until("target saw every dial", Duration.ofSeconds(10),
                () -> echo.acceptedConnections() - targetsBefore - 2 >= 0);
        int targetConnections = echo.acceptedConnections() - targetsBefore - 2;
        assertTrue(targetConnections <= dials, "target connections " + targetConnections + " <= dials " + dials);

        System.out.println(JSON.createObjectNode()
                .put("test", "rapid-reset flood")
                .put("streamsOpenedAndReset", resets.get())
                .put("opensFailedAfterClose", failures.get())
                .put("rstLimit", limit + " per " + mux.rstWindowSeconds() + " s")
                .put("goAwayOnTheWire", Http2Error.valueOf(wireGoAway).name())
                .put("goAwayReadByClient", attackerGoAway.errorCode != null)
                .put("floodMillis", floodMillis)
                .put("floodDials", dials)
                .put("dialBudget", allowed)
                .put("targetConnections", targetConnections)
                .put("liveStreamsAfter", fixture.gateway.liveStreams().size())
                .put("gatewayConnectionsAfter", fixture.gateway.connectionCount()));
        fresh.close();
        bystander.close();
    }

    @Test
    void pageLoadAbortingThreeHundredConnectionsKeepsItsConnection() throws Exception {
        TunnelConnection connection = fixture.connect();
        GoAwayRecorder goAway = watchGoAway(connection);
        String grant = fixture.grant("s-page", "127.0.0.1", echo.port());
        long dialsBefore = fixture.gateway.metrics().dialAttempts();
        int aborted = 0;
        for (int round = 0; round < 30; round++) {
            // Ten parallel connections, as a page fetches its assets, each aborted after its 200 answer.
            List<Future<Http2StreamChannel>> opens = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                opens.add(connection.openStream(target(), grant, Duration.ofSeconds(5)));
            }
            for (Future<Http2StreamChannel> f : opens) {
                Http2StreamChannel stream = f.get(10, TimeUnit.SECONDS);
                stream.close().get(5, TimeUnit.SECONDS); // RST_STREAM CANCEL after the 200
                aborted++;
            }
        }
        assertEquals(300, aborted);
        assertEquals(300, fixture.gateway.metrics().dialAttempts() - dialsBefore);
        assertTrue(connection.isUsable(), "a page load that aborts 300 connections is not punished");
        assertNull(goAway.errorCode, "no GOAWAY");
        Http2StreamChannel s = SecurityFixture.open(connection, target(), grant);
        assertEquals("4\n", SecurityFixture.exchange(s, "next".getBytes(StandardCharsets.US_ASCII)));
        Await.until("no live stream left", Duration.ofSeconds(10), () -> fixture.gateway.liveStreams().size() == 0);
        assertFalse(connection.isDraining());
        connection.close();
    }
}
