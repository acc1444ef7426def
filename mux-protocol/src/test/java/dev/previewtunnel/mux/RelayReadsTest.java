package dev.previewtunnel.mux;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelOption;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalIoHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The rule by which a relayed channel reads on within one turn: only once linked to a peer, only while the last read
 * filled its buffer, at most {@link RelayReads#MAX_READS} reads, and never once the peer is unwritable (so the relay's
 * memory bound, the peer's high-water mark plus one read, still holds).
 */
class RelayReadsTest {
    private final EmbeddedChannel channel = new EmbeddedChannel();
    private final EmbeddedChannel peer = new EmbeddedChannel();

    @AfterEach
    void close() {
        channel.finishAndReleaseAll();
        peer.finishAndReleaseAll();
    }

    @Test
    void readsOnceUntilLinkedToAPeer() {
        RecvByteBufAllocator.Handle handle = installed().newHandle();
        assertFalse(afterFullRead(handle));
    }

    @Test
    void readsOnWhileThePeerIsWritableUpToTheLimitThenAgainAfterTheTurn() {
        RecvByteBufAllocator.Handle handle = linked().newHandle();
        handle.reset(channel.config());
        for (int i = 1; i < RelayReads.MAX_READS; i++) {
            assertTrue(afterFullRead(handle), "read " + i);
        }
        assertFalse(afterFullRead(handle), "read " + RelayReads.MAX_READS);
        handle.readComplete(); // the next turn starts afresh, with or without reset()
        assertTrue(afterFullRead(handle));
    }

    @Test
    void stopsWhenTheLastReadDidNotFillItsBuffer() {
        RecvByteBufAllocator.Handle handle = linked().newHandle();
        handle.reset(channel.config());
        handle.attemptedBytesRead(16_384);
        handle.lastBytesRead(100);
        handle.incMessagesRead(1);
        assertFalse(handle.continueReading());
    }

    @Test
    void stopsAsSoonAsThePeerIsUnwritable() {
        RecvByteBufAllocator.Handle handle = linked().newHandle();
        handle.reset(channel.config());
        peer.config().setOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(8, 16));
        peer.write(Unpooled.wrappedBuffer(new byte[32])); // queued, not flushed: over the high-water mark
        assertFalse(peer.isWritable());
        assertFalse(afterFullRead(handle));
        peer.flush();
        assertTrue(peer.isWritable());
        handle.readComplete();
        assertTrue(afterFullRead(handle));
    }

    /**
     * The peer is set only once the relay handler is in the channel's pipeline. {@code link} may run on another
     * thread than the channels' shared loop; had it set the peer itself, the channel could read on into a pipeline
     * whose relay was not added yet, and lose the bytes.
     */
    @Test
    void readsOnOnlyOnceTheRelayIsInThePipeline() throws Exception {
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, LocalIoHandler.newFactory());
        LocalChannel relayed = new LocalChannel();
        LocalChannel sameLoopPeer = new LocalChannel();
        CountDownLatch gate = new CountDownLatch(1);
        try {
            group.register(relayed).sync();
            group.register(sameLoopPeer).sync(); // one loop for both, as link requires
            ReadBuffers.relayReads(relayed);
            relayed.eventLoop().execute(() -> awaitQuietly(gate)); // the loop is busy: handlerAdded must wait
            RelayHandler.link(relayed, sameLoopPeer, null); // from this thread, not the loop
            RecvByteBufAllocator.Handle handle = relayed.config().getRecvByteBufAllocator().newHandle();
            handle.reset(relayed.config());
            assertFalse(afterFullRead(handle), "no reading on before the relay handler is added");
            gate.countDown();
            relayed.eventLoop().submit(() -> { }).sync(); // runs after the pending handlerAdded
            handle.readComplete();
            assertTrue(afterFullRead(handle), "reads on once the relay is in place");
        } finally {
            gate.countDown();
            relayed.close().sync();
            sameLoopPeer.close().sync();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    private static void awaitQuietly(CountDownLatch gate) {
        try {
            gate.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private RelayReads installed() {
        ReadBuffers.relayReads(channel);
        return (RelayReads) channel.config().getRecvByteBufAllocator();
    }

    private RelayReads linked() {
        RelayReads reads = installed();
        RelayReads.linkPeer(channel, peer);
        return reads;
    }

    /** One read that filled its buffer; then: would the channel read again in this turn? */
    private static boolean afterFullRead(RecvByteBufAllocator.Handle handle) {
        handle.attemptedBytesRead(16_384);
        handle.lastBytesRead(16_384);
        handle.incMessagesRead(1);
        return handle.continueReading();
    }
}
