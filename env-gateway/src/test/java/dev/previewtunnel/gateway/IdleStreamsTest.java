package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.relay.RelayHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The per-connection idle sweep on a stream whose loop's clock the test moves (nothing sleeps). */
class IdleStreamsTest {
    private static final Duration IDLE = Duration.ofSeconds(1);
    private static final long SWEEP_MS = IDLE.toMillis() / IdleStreams.SWEEPS_PER_TIMEOUT;

    private final GatewayMetrics metrics = new GatewayMetrics(new SimpleMeterRegistry(), new LiveStreams());
    private final IdleStreams idle = new IdleStreams(IDLE);

    private EmbeddedChannel watchedStream() {
        StreamWatch watch = new StreamWatch(metrics, idle);
        EmbeddedChannel stream = new EmbeddedChannel(watch);
        stream.freezeTime();
        idle.watch(watch, stream.eventLoop());
        return stream;
    }

    /** Moves the stream's clock on by {@code millis}, one sweep period at a time, running what falls due. */
    private static void pass(EmbeddedChannel stream, long millis) {
        for (long done = 0; done < millis; done += SWEEP_MS) {
            stream.advanceTimeBy(Math.min(SWEEP_MS, millis - done), TimeUnit.MILLISECONDS);
            stream.runScheduledPendingTasks();
        }
    }

    @Test
    void aQuietStreamIsClosedAsIdleNotBeforeTheTimeoutAndWithinTwoSweepsAfterIt() {
        EmbeddedChannel stream = watchedStream();
        pass(stream, IDLE.toMillis() - 1);
        assertTrue(stream.isOpen(), "closed before the idle timeout");
        pass(stream, 2 * SWEEP_MS + 1);
        assertFalse(stream.isOpen(), "still open two sweeps after the idle timeout");
        assertEquals(StreamEnding.IDLE, StreamEnding.why(stream, RelayHandler.End.A_CLOSED_FIRST));
        assertEquals(0, idle.size());
        assertEquals(-1, stream.runScheduledPendingTasks(), "the sweep stops with no stream to watch");
    }

    @Test
    void framesEitherWayKeepAStreamOpenAndItsQuietIsCountedFromTheLastOne() {
        EmbeddedChannel stream = watchedStream();
        for (int i = 0; i < 6; i++) { // 3 s of a frame every half second, alternately read and written
            pass(stream, IDLE.toMillis() / 2);
            if (i % 2 == 0) {
                stream.writeInbound(Unpooled.wrappedBuffer(new byte[] {1}));
                ((io.netty.buffer.ByteBuf) stream.readInbound()).release();
            } else {
                stream.writeOutbound(Unpooled.wrappedBuffer(new byte[] {2}));
                ((io.netty.buffer.ByteBuf) stream.readOutbound()).release();
            }
            assertTrue(stream.isOpen(), "closed while moving frames, after " + (i + 1) * IDLE.toMillis() / 2 + " ms");
        }
        pass(stream, IDLE.toMillis() - SWEEP_MS - 1);
        assertTrue(stream.isOpen(), "closed before the idle timeout counted from its last frame");
        pass(stream, 3 * SWEEP_MS);
        assertFalse(stream.isOpen());
    }

    @Test
    void aStreamThatClosesOnItsOwnLeavesTheSweepAndStopsIt() {
        EmbeddedChannel stream = watchedStream();
        assertEquals(1, idle.size());
        stream.close();
        assertEquals(0, idle.size(), "a closed stream is unwatched at once, not held until a sweep");
        pass(stream, SWEEP_MS);
        assertEquals(-1, stream.runScheduledPendingTasks(), "the sweep stops with no stream to watch");
        assertEquals("ingress_closed", StreamEnding.why(stream, RelayHandler.End.A_CLOSED_FIRST),
                "closed by its peer, not for being idle");
    }
}
