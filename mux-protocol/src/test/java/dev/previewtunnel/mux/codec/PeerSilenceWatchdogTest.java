package dev.previewtunnel.mux.codec;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Liveness counts what is received, never what is sent: in the event loop's own (advanced) time, a connection that
 * only writes is closed at the keepalive timeout, one that keeps receiving stays open, and the PING is asked for
 * once per silence, after the interval or three quarters of the timeout, whichever is sooner.
 */
class PeerSilenceWatchdogTest {

    @Test
    void writingDoesNotKeepASilentPeerAlive() {
        AtomicInteger pings = new AtomicInteger();
        EmbeddedChannel ch = channel(Duration.ofSeconds(2), Duration.ofSeconds(2), pings);
        for (int ms = 100; ms < 2_000; ms += 100) {
            ch.writeOutbound(Unpooled.wrappedBuffer(new byte[] {1})); // a request every 100 ms: counts for nothing
            ReferenceCountUtil.release(ch.readOutbound());
            advance(ch, 100);
            assertTrue(ch.isOpen(), "open at " + ms + " ms");
            assertEquals(ms >= 1_500 ? 1 : 0, pings.get(), "PINGs asked for by " + ms + " ms");
        }
        advance(ch, 100);
        assertFalse(ch.isOpen(), "closed at the 2 s timeout");
        assertEquals(1, pings.get());
    }

    @Test
    void receivingKeepsItOpenAndPingsOncePerSilence() {
        AtomicInteger pings = new AtomicInteger();
        EmbeddedChannel ch = channel(Duration.ofSeconds(1), Duration.ofSeconds(3), pings);
        for (int i = 0; i < 20; i++) { // 20 s, something received every 1.2 s
            advance(ch, 1_200);
            ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {1}));
            assertTrue(ch.isOpen());
        }
        // Silent for 1.2 s each time: one PING asked for each time (at 1 s), never more.
        assertEquals(20, pings.get());
        advance(ch, 2_900);
        assertTrue(ch.isOpen());
        advance(ch, 200);
        assertFalse(ch.isOpen(), "closed 3 s after the last byte received");
        ch.finishAndReleaseAll();
    }

    @Test
    void thePingGoesAtThreeQuartersOfTheTimeoutWhenTheIntervalIsLonger() {
        assertEquals(Duration.ofSeconds(15), PeerSilenceWatchdog.pingAfter(Duration.ofHours(1), Duration.ofSeconds(20)));
        assertEquals(Duration.ofSeconds(15), PeerSilenceWatchdog.pingAfter(Duration.ofSeconds(15), Duration.ofSeconds(20)));
        AtomicInteger pings = new AtomicInteger();
        EmbeddedChannel ch = channel(Duration.ofHours(1), Duration.ofSeconds(20), pings);
        advance(ch, 14_900);
        assertEquals(0, pings.get());
        advance(ch, 200);
        assertEquals(1, pings.get(), "a healthy peer gets a quarter of the timeout to answer");
        assertTrue(ch.isOpen());
        ch.finishAndReleaseAll();
    }

    private static EmbeddedChannel channel(Duration interval, Duration timeout, AtomicInteger pings) {
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.pipeline().addLast(new PeerSilenceWatchdog(interval, timeout), new ChannelInboundHandlerAdapter() {
            @Override
            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                if (evt == PeerSilenceWatchdog.PING_NEEDED) {
                    pings.incrementAndGet();
                }
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ReferenceCountUtil.release(msg);
            }
        });
        return ch;
    }

    private static void advance(EmbeddedChannel ch, long millis) {
        ch.advanceTimeBy(millis, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        ch.runPendingTasks();
    }
}
