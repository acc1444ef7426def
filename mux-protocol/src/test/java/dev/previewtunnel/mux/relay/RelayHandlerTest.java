package dev.previewtunnel.mux.relay;

import dev.previewtunnel.testing.SharedLoopChannel;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link RelayHandler}'s own contract on two linked embedded channels: bytes move across as they are, reads are
 * issued only while the peer is writable, end of input becomes {@link OutputShutdown} on the peer, both directions
 * ended close both channels, and any other close or error closes the other side.
 */
class RelayHandlerTest {
    /** Holds flushes while {@code held}: what is written stays in the outbound buffer, the channel unwritable. */
    static final class Gate extends ChannelOutboundHandlerAdapter {
        boolean held;
        ChannelHandlerContext ctx;

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public void flush(ChannelHandlerContext ctx) {
            if (!held) {
                ctx.flush();
            }
        }

        void open() {
            held = false;
            ctx.flush();
        }
    }

    record Ended(long fromA, long fromB, RelayHandler.End end) {
    }

    private final ReadCounter readsA = new ReadCounter();
    private final ReadCounter readsB = new ReadCounter();
    private final Gate gateB = new Gate();
    private final EmbeddedChannel a = new EmbeddedChannel(readsA);
    private final EmbeddedChannel b = new SharedLoopChannel(a.eventLoop(), gateB, readsB); // link refuses two loops
    private final List<Ended> ended = new ArrayList<>();
    private int baseA;
    private int baseB;

    /** Links a and b; read counts are taken from here (an embedded channel reads once when it becomes active). */
    private void link() {
        baseA = readsA.count;
        baseB = readsB.count;
        RelayHandler.link(a, b, (fromA, fromB, end) -> ended.add(new Ended(fromA, fromB, end)));
    }

    private static ByteBuf bytes(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    private static String text(ByteBuf b) {
        try {
            return b.toString(StandardCharsets.US_ASCII);
        } finally {
            b.release();
        }
    }

    @Test
    void linkingTurnsAutoReadOffAndAsksEachSideForItsFirstRead() {
        link();
        assertFalse(a.config().isAutoRead());
        assertFalse(b.config().isAutoRead());
        assertEquals(baseA + 1, readsA.count);
        assertEquals(baseB + 1, readsB.count);
        finish();
    }

    @Test
    void bytesCrossAsTheSameBufferAndTheNextReadFollowsWhileThePeerIsWritable() {
        link();
        ByteBuf sent = bytes("ping");
        a.writeInbound(sent);
        ByteBuf got = b.readOutbound();
        assertSame(sent, got, "relayed as is, no copy");
        assertEquals("ping", text(got));
        assertEquals(0, sent.refCnt());
        assertEquals(baseA + 2, readsA.count, "peer writable: read on after the read completed");

        b.writeInbound(bytes("pong"));
        assertEquals("pong", text(a.readOutbound()));
        assertEquals(baseB + 2, readsB.count);
        finish();
    }

    @Test
    void readsStopWhileThePeerIsUnwritableAndResumeWhenItDrains() {
        b.config().setWriteBufferWaterMark(new WriteBufferWaterMark(8, 16));
        link();
        gateB.held = true;
        a.writeInbound(bytes("more than sixteen bytes"));
        assertFalse(b.isWritable());
        assertEquals(baseA + 1, readsA.count, "no read while the peer cannot take more");

        gateB.open(); // the peer's socket takes the bytes: writable again
        a.runPendingTasks(); // the resume is posted to a's loop
        assertTrue(b.isWritable());
        assertEquals(baseA + 2, readsA.count, "read on once the peer drained");
        assertEquals("more than sixteen bytes", text(b.readOutbound()));
        finish();
    }

    @Test
    void endOfInputIsPassedOnAndBothEndsClosedOnceBothDirectionsFinished() {
        link();
        a.writeInbound(bytes("last"));
        a.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        assertEquals("last", text(b.readOutbound()));
        assertSame(OutputShutdown.INSTANCE, b.readOutbound(), "a's end of input: b's output ends after its bytes");
        assertTrue(a.isOpen() && b.isOpen(), "half-closed: b may still answer");

        b.writeInbound(bytes("answer"));
        assertEquals("answer", text(a.readOutbound()));
        b.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        assertSame(OutputShutdown.INSTANCE, a.readOutbound());
        a.runPendingTasks();
        b.runPendingTasks();
        assertFalse(a.isOpen());
        assertFalse(b.isOpen());
        assertEquals(List.of(new Ended(4, 6, RelayHandler.End.BOTH_ENDED)), ended);
        finish();
    }

    @Test
    void aCloseOnOneSideClosesTheOther() {
        link();
        a.close();
        assertFalse(b.isOpen(), "aborted, not left half-open");
        assertEquals(List.of(new Ended(0, 0, RelayHandler.End.A_CLOSED_FIRST)), ended);
        finish();
    }

    @Test
    void theOtherSidesCloseIsReportedAsItsOwn() {
        link();
        b.close();
        a.runPendingTasks(); // b's close is announced on the loop the two share
        assertFalse(a.isOpen());
        assertEquals(List.of(new Ended(0, 0, RelayHandler.End.B_CLOSED_FIRST)), ended);
        finish();
    }

    @Test
    void anErrorClosesBothSides() {
        link();
        a.pipeline().fireExceptionCaught(new IOException("connection reset"));
        assertFalse(a.isOpen());
        assertFalse(b.isOpen());
        finish();
    }

    @Test
    void onlyBytesTravelAnythingElseIsReleased() {
        link();
        ByteBuf inside = bytes("not bytes");
        io.netty.buffer.DefaultByteBufHolder holder = new io.netty.buffer.DefaultByteBufHolder(inside);
        a.writeInbound(holder);
        assertEquals(0, inside.refCnt());
        assertNull(b.readOutbound());
        finish();
    }

    @Test
    void aHalfCloseThePeerRefusesClosesThePeer() {
        link();
        b.pipeline().addFirst(new ChannelOutboundHandlerAdapter() {
            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                if (msg == OutputShutdown.INSTANCE) {
                    promise.setFailure(new IOException("reset meanwhile"));
                } else {
                    ctx.write(msg, promise);
                }
            }
        });
        a.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        assertFalse(b.isOpen(), "a peer whose output can never finish is closed");
        finish();
    }

    private void finish() {
        a.finishAndReleaseAll();
        b.finishAndReleaseAll();
    }
}
