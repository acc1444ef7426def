package dev.previewtunnel.gateway;

import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StreamWriteSharesTest {
    private static final int KIB = 1024;

    @Test
    void theMarkIsTheBudgetPerStreamAsAPowerOfTwoBetweenTheFloorAndThePerStreamMark() {
        long budget = 16L << 20;
        assertEquals(512 * KIB, StreamWriteShares.highFor(budget, 512 * KIB, 0));
        assertEquals(512 * KIB, StreamWriteShares.highFor(budget, 512 * KIB, 32), "16 MiB / 32 = 512 KiB");
        assertEquals(256 * KIB, StreamWriteShares.highFor(budget, 512 * KIB, 33), "rounded down");
        assertEquals(64 * KIB, StreamWriteShares.highFor(budget, 512 * KIB, 250));
        assertEquals(32 * KIB, StreamWriteShares.highFor(budget, 512 * KIB, 1000), "floor");
        assertEquals(32 * KIB, StreamWriteShares.highFor(budget, 512 * KIB, 100_000), "floor");
        for (int n = 1; n <= 1024; n++) { // the promise: streams x mark stays within max(budget, n x floor)
            long total = (long) n * StreamWriteShares.highFor(budget, 512 * KIB, n);
            assertTrue(total <= Math.max(budget, (long) n * StreamWriteShares.MIN_HIGH), "n=" + n);
            assertTrue(total >= Math.min(budget / 2, 512L * KIB), "n=" + n + ": at least half the budget is used");
        }
    }

    @Test
    void marksShrinkAsStreamsOpenAndGrowBackAsTheyClose() {
        StreamWriteShares shares = new StreamWriteShares(256 * KIB, 128 * KIB);
        List<EmbeddedChannel> streams = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            EmbeddedChannel ch = new EmbeddedChannel();
            streams.add(ch);
            shares.add(ch);
        }
        assertEquals(128 * KIB, mark(streams.get(0)), "two streams: the full per-stream mark each");
        for (int i = 0; i < 6; i++) {
            EmbeddedChannel ch = new EmbeddedChannel();
            streams.add(ch);
            shares.add(ch);
        }
        for (EmbeddedChannel ch : streams) {
            assertEquals(32 * KIB, mark(ch), "eight streams share 256 KiB");
            assertEquals(16 * KIB, ch.config().getWriteBufferLowWaterMark());
        }
        for (int i = 0; i < 6; i++) {
            streams.remove(streams.size() - 1).close().syncUninterruptibly();
        }
        assertEquals(128 * KIB, shares.high());
        assertEquals(128 * KIB, mark(streams.get(0)), "the survivors get their full mark back");
        assertEquals(128 * KIB, mark(streams.get(1)));
        streams.forEach(EmbeddedChannel::finishAndReleaseAll);
    }

    private static int mark(EmbeddedChannel ch) {
        return ch.config().getWriteBufferHighWaterMark();
    }
}
