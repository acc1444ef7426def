package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.relay.RelayHandler;
import dev.previewtunnel.testing.HeldWrites;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The stream idle timeout on a stream whose loop's clock the test moves. A write counts when it completes, so bytes
 * queued behind the peer's flow-control window that keep leaving keep the stream open after the last write was made
 * (a slow reader draining a response); a per-connection sweep that counted writes when made would have cut it
 * (docs/performance.md, finding 54).
 */
class IdleStreamCloserTest {
    private static final long IDLE_MS = 1_000;

    /** Each write's promise held until the test completes it: the bytes wait for the peer's window. */
    private final HeldWrites writes = new HeldWrites();
    private final EmbeddedChannel stream = new EmbeddedChannel();

    IdleStreamCloserTest() {
        stream.freezeTime();
        stream.pipeline().addLast(writes, new IdleStreamCloser(IDLE_MS));
    }

    private void pass(long millis) {
        stream.advanceTimeBy(millis, TimeUnit.MILLISECONDS);
        stream.runScheduledPendingTasks();
    }

    @Test
    void aQuietStreamIsClosedAsIdleAtTheTimeoutNotBefore() {
        pass(IDLE_MS - 1);
        assertTrue(stream.isOpen(), "closed before the idle timeout");
        pass(1);
        assertFalse(stream.isOpen(), "still open at the idle timeout");
        assertEquals(StreamEnding.IDLE, StreamEnding.why(stream, RelayHandler.End.A_CLOSED_FIRST));
    }

    @Test
    void bytesStillLeavingAfterTheLastWriteKeepTheStreamOpen() {
        stream.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {1})); // queued: the peer's window is closed
        pass(900);
        writes.next().setSuccess(); // the window opened, the bytes left: 900 ms after the write was made
        pass(IDLE_MS - 1);
        assertTrue(stream.isOpen(), "cut as idle although its bytes left less than the timeout ago");
        pass(1);
        assertFalse(stream.isOpen(), "still open a whole timeout after its bytes left");
    }

    @Test
    void readsKeepTheStreamOpen() {
        for (int i = 0; i < 4; i++) {
            pass(IDLE_MS / 2);
            stream.writeInbound(Unpooled.wrappedBuffer(new byte[] {2}));
            ReferenceCountUtil.release(stream.readInbound());
        }
        assertTrue(stream.isOpen(), "closed while reading every half timeout");
        pass(IDLE_MS);
        assertFalse(stream.isOpen());
    }
}
