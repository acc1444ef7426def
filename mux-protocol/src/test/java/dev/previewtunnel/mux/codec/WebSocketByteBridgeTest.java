package dev.previewtunnel.mux.codec;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.ContinuationWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import org.junit.jupiter.api.Test;

import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link WebSocketByteBridge}'s own contract: binary payloads in as bytes, bytes out coalesced into binary messages,
 * control frames answered, a close frame last, every buffer released once.
 */
class WebSocketByteBridgeTest {
    private static final int MAX_MESSAGE = 16;

    private static EmbeddedChannel server(boolean answersViolations) {
        return new EmbeddedChannel(new WebSocketByteBridge(MAX_MESSAGE, answersViolations, false));
    }

    private static ByteBuf bytes(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    private static String text(ByteBuf b) {
        return b.toString(StandardCharsets.US_ASCII);
    }

    @Test
    void binaryAndContinuationPayloadsGoUpAsTheSameBuffersUnaggregated() {
        EmbeddedChannel ch = server(false);
        BinaryWebSocketFrame first = new BinaryWebSocketFrame(false, 0, bytes("ab"));
        ContinuationWebSocketFrame rest = new ContinuationWebSocketFrame(true, 0, bytes("cd"));
        ch.writeInbound(first, rest);
        ByteBuf one = ch.readInbound();
        ByteBuf two = ch.readInbound();
        assertSame(first.content(), one);
        assertSame(rest.content(), two);
        assertEquals("ab", text(one));
        assertEquals("cd", text(two));
        one.release();
        two.release();
        assertEquals(0, first.refCnt());
        assertEquals(0, rest.refCnt());
        assertFalse(ch.finish());
    }

    @Test
    void bytesWrittenBetweenFlushesLeaveAsFewBinaryMessagesAsTheLimitAllows() {
        EmbeddedChannel ch = server(false);
        ByteBuf a = bytes("0123456789");
        ByteBuf b = bytes("abcdefghij");
        ChannelFuture fa = ch.write(a);
        ChannelFuture fb = ch.write(b);
        assertNull(ch.readOutbound(), "nothing leaves before the flush");
        ch.flush();
        BinaryWebSocketFrame m1 = ch.readOutbound();
        BinaryWebSocketFrame m2 = ch.readOutbound();
        assertNull(ch.readOutbound());
        assertEquals(MAX_MESSAGE, m1.content().readableBytes(), "coalesced up to the message limit");
        assertEquals("0123456789abcdefghij", text(m1.content()) + text(m2.content()));
        m1.release();
        m2.release();
        assertEquals(0, a.refCnt());
        assertEquals(0, b.refCnt());
        assertTrue(fa.isSuccess() && fb.isSuccess());
        assertFalse(ch.finish());
    }

    @Test
    void aPingIsAnsweredWithItsPayloadAndPongsAreDropped() {
        EmbeddedChannel ch = server(false);
        PingWebSocketFrame ping = new PingWebSocketFrame(bytes("p1"));
        ch.writeInbound(ping);
        PongWebSocketFrame pong = ch.readOutbound();
        assertEquals("p1", text(pong.content()));
        pong.release();
        assertEquals(0, ping.refCnt());

        PongWebSocketFrame theirs = new PongWebSocketFrame(bytes("x"));
        ch.writeInbound(theirs);
        assertEquals(0, theirs.refCnt());
        assertNull(ch.readInbound());
        assertTrue(ch.isOpen());
        assertFalse(ch.finish());
    }

    @Test
    void aCloseFrameIsAnsweredAfterWhatWasWrittenAndTheConnectionCloses() {
        EmbeddedChannel ch = server(false);
        ch.write(bytes("unsent"));
        CloseWebSocketFrame theirs = new CloseWebSocketFrame(WebSocketCloseStatus.NORMAL_CLOSURE);
        ch.writeInbound(theirs);
        assertEquals(0, theirs.refCnt());
        BinaryWebSocketFrame data = ch.readOutbound();
        assertEquals("unsent", text(data.content()), "what the codec wrote goes first");
        data.release();
        CloseWebSocketFrame ours = ch.readOutbound();
        assertEquals(WebSocketCloseStatus.NORMAL_CLOSURE.code(), ours.statusCode());
        ours.release();
        assertFalse(ch.isOpen());
        assertFalse(ch.finish());
    }

    @Test
    void aTextFrameIsAProtocolViolationClosedWith1003() {
        EmbeddedChannel ch = server(false);
        TextWebSocketFrame textFrame = new TextWebSocketFrame("hello");
        ch.writeInbound(textFrame);
        assertEquals(0, textFrame.refCnt());
        CloseWebSocketFrame close = ch.readOutbound();
        assertEquals(WebSocketCloseStatus.INVALID_MESSAGE_TYPE.code(), close.statusCode());
        close.release();
        assertFalse(ch.isOpen());
        assertFalse(ch.finish());
    }

    @Test
    void afterTheCloseFrameInputIsDiscardedAndWritesFailReleased() {
        EmbeddedChannel ch = server(false);
        ch.writeInbound(new CloseWebSocketFrame(WebSocketCloseStatus.NORMAL_CLOSURE));
        CloseWebSocketFrame close = ch.readOutbound();
        close.release();
        ByteBuf late = bytes("late");
        // The channel is closed: Netty fails the write before the handler; a bridge whose close frame is out
        // but whose channel is still open fails it itself (next test), either way released.
        ChannelFuture f = ch.writeAndFlush(late);
        assertFalse(f.isSuccess());
        assertEquals(0, late.refCnt());
        assertFalse(ch.finish());
    }

    @Test
    void writesAfterTheCloseFrameOnAStillOpenChannelAreReleasedAndFailed() {
        EmbeddedChannel ch = new EmbeddedChannel();
        // Keeps the channel open after the bridge's close (the close of a real socket takes a turn of the loop).
        ch.pipeline().addLast(new io.netty.channel.ChannelOutboundHandlerAdapter() {
            @Override
            public void close(io.netty.channel.ChannelHandlerContext ctx, io.netty.channel.ChannelPromise p) {
                p.setSuccess();
            }
        }, new WebSocketByteBridge(MAX_MESSAGE, false, false));
        ch.writeInbound(new CloseWebSocketFrame(WebSocketCloseStatus.NORMAL_CLOSURE));
        CloseWebSocketFrame close = ch.readOutbound();
        close.release();
        assertTrue(ch.isOpen());
        ByteBuf late = bytes("late");
        ChannelFuture f = ch.writeAndFlush(late);
        assertInstanceOf(ClosedChannelException.class, f.cause());
        assertEquals(0, late.refCnt());
        BinaryWebSocketFrame afterClose = new BinaryWebSocketFrame(bytes("in"));
        ch.writeInbound(afterClose);
        assertEquals(0, afterClose.refCnt(), "input after our close frame is discarded");
        assertNull(ch.readInbound());
        assertNull(ch.readOutbound());
        assertFalse(ch.finish());
    }

    @Test
    void onTheGatewayADecoderViolationIsAnsweredWithItsStatus() {
        EmbeddedChannel ch = server(true);
        ch.pipeline().fireExceptionCaught(new CorruptedWebSocketFrameException(WebSocketCloseStatus.MESSAGE_TOO_BIG,
                "Max frame length of 16 has been exceeded."));
        CloseWebSocketFrame close = ch.readOutbound();
        assertEquals(WebSocketCloseStatus.MESSAGE_TOO_BIG.code(), close.statusCode());
        assertEquals("Max frame length of 16 has been exceeded.", close.reasonText());
        close.release();
        assertFalse(ch.isOpen());
        assertFalse(ch.finish());
    }

    @Test
    void writesPendingAtCloseAreSentBeforeTheChannelCloses() {
        EmbeddedChannel ch = server(false);
        ch.write(bytes("goaway"));
        ch.close();
        BinaryWebSocketFrame sent = ch.readOutbound();
        assertEquals("goaway", text(sent.content()));
        sent.release();
        assertFalse(ch.finish());
    }
}
