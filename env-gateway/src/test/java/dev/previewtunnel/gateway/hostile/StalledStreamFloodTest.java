package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.relay.WindowPacedFlood;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.sampleapp.RawEchoServer;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile peers, item 11 (docs/security.md): an authenticated tunnel peer opens a granted stream to a target that
 * never reads, and sends its data one byte per DATA frame. The gateway's relay stalls after a few kilobytes (its
 * socket to the target is full), and the rest of the stream's 1 MiB window arrives as up to a million frames that
 * wait in the stream's inbound queue. The real gateway runs in a child JVM with a 64 MiB heap and the shipped flags:
 * it must reset the stream ({@code ENHANCE_YOUR_CALM}), stay alive and serve an honest client. Before the limit on
 * a stalled stream's queued frames, the queue grew until the gateway ran out of heap and exited. Figures are printed
 * ({@code FLOOD ...}) for docs/security.md.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class StalledStreamFloodTest {
    private static final String ENV = "env-flood";
    /** More frames than the window allows: the sender stops at the reset, or when flow control holds it back. */
    private static final int MAX_FRAMES = 1_100_000;
    private static final Duration FLOOD_BOUND = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    private GatewayProcess gateway;
    private RawEchoServer echo;
    private ServerSocket neverReads;
    private EventLoopGroup group;
    private GrantIssuer issuer;
    private String token;

    @BeforeEach
    void start() throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        token = issuer.issueConnectionToken(ENV, Duration.ofHours(1));
        echo = RawEchoServer.start("127.0.0.1", 0);
        neverReads = new ServerSocket();
        neverReads.setReceiveBufferSize(4096); // inherited by the accepted socket: the gateway's relay stalls sooner
        neverReads.bind(new InetSocketAddress("127.0.0.1", 0));
        group = Transports.best().newGroup(1, "stall-flood-client");
        gateway = GatewayProcess.start(dir, dir.resolve("keys"), ENV, List.of("-Xmx64m"));
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (gateway != null) {
                gateway.close();
            }
        } finally {
            if (echo != null) {
                echo.close();
            }
            if (neverReads != null) {
                neverReads.close();
            }
            if (group != null) {
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            }
        }
    }

    @Test
    void oneByteFramesToAStalledTarget() throws Exception {
        HonestClient.exchange(group, gateway, token, issuer, ENV, echo.port()); // the gateway works, and is warm
        long baselineKib = gateway.statusKib("VmRSS");
        URI url = URI.create(gateway.ready.path("url").asText());
        TunnelConnection connection = new TunnelClient(group, Transports.best().socketChannel(),
                MuxSettings.defaults()).connect(url, token, null, Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
        String grant = issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "127.0.0.1", neverReads.getLocalPort()),
                Duration.ofMinutes(5));
        // The gateway answers once it has dialled the target: the connection waits in the listener's backlog.
        Http2StreamChannel stream = connection.openStream(new Authority("127.0.0.1", neverReads.getLocalPort()),
                grant, Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
        Socket target = accept(); // never read
        try {
            // The gateway returns credit at half its 1 MiB window: what is held back leaves room for a chunk more.
            WindowPacedFlood flood = new WindowPacedFlood(576 * 1024, MAX_FRAMES);
            Ending ending = new Ending(flood);
            stream.pipeline().addLast(ending);
            flood.start(stream);

            long started = System.nanoTime();
            long peakKib = gateway.peakRssKibUntil(ending.ended, started, FLOOD_BOUND, baselineKib);
            Duration took = GatewayProcess.elapsedSince(started);
            boolean alive = !gateway.process.waitFor(1, TimeUnit.SECONDS);
            Long reset = flood.reset.getNow(null);
            System.out.printf("FLOOD 1-byte DATA frames to a stalled target: %d KiB to stall it, then %d frames sent"
                            + " in %d ms in all; stream %s, its connection %s; gateway RSS %d MiB before, peak %d MiB"
                            + " during (VmHWM %d MiB); gateway %s%n", flood.fillerBytes.get() >> 10, flood.sent.get(),
                    took.toMillis(), reset != null ? "reset (" + Http2Error.valueOf(reset) + ")" : ending.ended.isDone()
                            ? "closed (no reset seen)" : "still open",
                    connection.channel().isActive() ? "open" : "closed", baselineKib >> 10, peakKib >> 10,
                    alive ? gateway.statusKib("VmHWM") >> 10 : -1, alive ? "alive" : "exited "
                            + gateway.process.exitValue());
            assertTrue(alive, () -> "the gateway died under the flood (exit " + gateway.process.exitValue() + ")");
            String log = gateway.stderr();
            assertTrue(ending.ended.isDone(), () -> "the flooding stream is still open after " + FLOOD_BOUND
                    + "; the gateway's log: " + log.substring(Math.max(0, log.length() - 3000)));
            // The reset is the gateway's doing, not a side effect: it says why. (The attacker may not see the
            // RST_STREAM itself: the frames it still had in flight can make the gateway close the connection, and a
            // socket closed with unread input is reset, which discards what the attacker had not read yet.)
            assertTrue(log.contains("DATA frames while it was not reading"), () -> "no reset for the stalled stream's"
                    + " queued frames in the gateway's log: " + log.substring(Math.max(0, log.length() - 3000)));
        } finally {
            target.close();
            connection.channel().close().syncUninterruptibly();
        }
        HonestClient.exchange(group, gateway, token, issuer, ENV, echo.port());
        assertTrue(gateway.process.isAlive());
    }

    private Socket accept() throws Exception {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return neverReads.accept();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }).get(30, TimeUnit.SECONDS);
    }

    /** Records how the flooded stream ends: its reset for the flood, its close for the test. */
    private static final class Ending extends ChannelInboundHandlerAdapter {
        private final WindowPacedFlood flood;
        final CompletableFuture<Void> ended = new CompletableFuture<>();

        Ending(WindowPacedFlood flood) {
            this.flood = flood;
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof Http2ResetFrame rst) {
                flood.reset.complete(rst.errorCode());
            }
            ReferenceCountUtil.release(evt);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            ended.complete(null);
        }
    }
}
