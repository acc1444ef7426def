package dev.previewtunnel.mux.codec;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link WriteBacklogLimit}'s own contract: a peer that leaves more than the limit of our writes unread is closed
 * (what is queued released, its writes failed); below the limit nothing happens.
 */
class WriteBacklogLimitTest {
    private static final int LIMIT = 1000;

    /** A peer that reads nothing: flushes never reach the socket, so every write stays in the outbound buffer. */
    private static EmbeddedChannel unreadPeer() {
        EmbeddedChannel ch = new EmbeddedChannel(new ChannelOutboundHandlerAdapter() {
            @Override
            public void flush(ChannelHandlerContext ctx) {
                // the socket takes nothing
            }
        });
        WriteBacklogLimit.install(ch, LIMIT);
        return ch;
    }

    @Test
    void belowTheLimitWritesWait() {
        EmbeddedChannel ch = unreadPeer();
        ByteBuf small = Unpooled.buffer(100).writeZero(100);
        ChannelFuture f = ch.writeAndFlush(small);
        assertTrue(ch.isOpen());
        assertFalse(f.isDone());
        assertEquals(1, small.refCnt());
        ch.close();
        assertEquals(0, small.refCnt(), "released by the close");
        assertFalse(f.isSuccess());
        assertFalse(ch.finish());
    }

    @Test
    void pastTheLimitTheConnectionIsClosedAndItsBacklogReleased() {
        EmbeddedChannel ch = unreadPeer();
        ByteBuf first = Unpooled.buffer(600).writeZero(600);
        ByteBuf second = Unpooled.buffer(600).writeZero(600);
        ChannelFuture f1 = ch.writeAndFlush(first);
        assertTrue(ch.isOpen());
        ChannelFuture f2 = ch.writeAndFlush(second);
        assertFalse(ch.isOpen(), "1,200 bytes unread > 1,000");
        assertEquals(0, first.refCnt());
        assertEquals(0, second.refCnt());
        assertFalse(f1.isSuccess());
        assertFalse(f2.isSuccess());
        assertFalse(ch.finish());
    }

    @Test
    void theLimitMustBePositive() {
        EmbeddedChannel ch = new EmbeddedChannel();
        assertThrows(IllegalArgumentException.class, () -> WriteBacklogLimit.install(ch, 0));
        assertFalse(ch.finish());
    }

    @Test
    void itSitsFirstSoEveryWritePassesIt() {
        EmbeddedChannel ch = new EmbeddedChannel(new ChannelOutboundHandlerAdapter());
        WriteBacklogLimit.install(ch, LIMIT);
        assertEquals(WriteBacklogLimit.NAME, ch.pipeline().names().get(0));
        assertFalse(ch.finish());
    }
}
