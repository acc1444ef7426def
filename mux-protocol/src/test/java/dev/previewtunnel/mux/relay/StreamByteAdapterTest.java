package dev.previewtunnel.mux.relay;

import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.DefaultHttp2ResetFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2Error;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link StreamByteAdapter}'s own contract: an HTTP/2 stream's frames in, a TCP socket's bytes and events out. */
class StreamByteAdapterTest {
    /** What reaches the handler above the adapter: messages, user events, exceptions; and read() calls below it. */
    static final class Above extends ChannelInboundHandlerAdapter {
        final List<Object> events = new ArrayList<>();
        final List<Throwable> errors = new ArrayList<>();

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            events.add(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            errors.add(cause);
        }
    }

    private final ReadCounter reads = new ReadCounter();
    private final Above above = new Above();
    private final EmbeddedChannel ch = channel();

    private EmbeddedChannel channel() {
        EmbeddedChannel c = new EmbeddedChannel();
        c.config().setAutoRead(false);
        // Messages that pass "above" reach the channel's inbound queue (readInbound).
        c.pipeline().addLast(reads, new StreamByteAdapter(), above);
        return c;
    }

    private static ByteBuf bytes(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    @Test
    void dataPayloadIsPassedOnAsTheSameBufferAndReleasedOnceByItsReader() {
        Http2DataFrame data = new DefaultHttp2DataFrame(bytes("hello"), false);
        ch.writeInbound(data);
        ByteBuf got = ch.readInbound();
        assertSame(data.content(), got, "the payload itself, not a copy");
        assertEquals("hello", got.toString(StandardCharsets.US_ASCII));
        assertTrue(got.release());
        assertEquals(0, data.refCnt());
        assertTrue(above.events.isEmpty());
        assertFalse(ch.finish());
    }

    @Test
    void endStreamIsEndOfInputOnceAndTheEmptyFrameIsReleased() {
        Http2DataFrame last = new DefaultHttp2DataFrame(Unpooled.buffer(0), true);
        ch.writeInbound(last);
        assertEquals(0, last.refCnt());
        ch.writeInbound(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers(), true)); // trailers after it
        assertEquals(List.of(ChannelInputShutdownEvent.INSTANCE, ChannelInputShutdownReadComplete.INSTANCE),
                above.events, "one end of input, however many END_STREAMs");
        assertNull(ch.readInbound());
        assertFalse(ch.finish());
    }

    @Test
    void dataWithEndStreamPassesItsBytesThenEndsInput() {
        ch.writeInbound(new DefaultHttp2DataFrame(bytes("bye"), true));
        ByteBuf got = ch.readInbound();
        assertEquals("bye", got.toString(StandardCharsets.US_ASCII));
        got.release();
        assertEquals(0, got.refCnt());
        assertEquals(ChannelInputShutdownEvent.INSTANCE, above.events.get(0));
        assertFalse(ch.finish());
    }

    @Test
    void aFrameThatReachesNobodyAsksForTheNextReadOnItsBehalf() {
        int before = reads.count;
        Http2DataFrame empty = new DefaultHttp2DataFrame(Unpooled.buffer(0), false);
        ch.writeInbound(empty);
        assertEquals(0, empty.refCnt());
        assertEquals(before + 1, reads.count, "an empty DATA frame: read on");
        ch.writeInbound(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers(), false));
        assertEquals(before + 2, reads.count, "trailers without END_STREAM: read on");
        assertNull(ch.readInbound());
        assertTrue(above.events.isEmpty());

        ch.writeInbound(new DefaultHttp2DataFrame(bytes("x"), false));
        assertEquals(before + 2, reads.count, "bytes went up: the reader above decides when to read");
        ByteBuf got = ch.readInbound();
        got.release();
        assertFalse(ch.finish());
    }

    @Test
    void resetIsATypedErrorAndClosesTheStream() {
        ch.writeInbound(new DefaultHttp2ResetFrame(Http2Error.CANCEL));
        assertEquals(1, above.errors.size());
        TunnelStreamException e = assertInstanceOf(TunnelStreamException.class, above.errors.get(0));
        assertEquals(TunnelError.STREAM_RESET, e.error());
        assertFalse(ch.isOpen());
        assertFalse(ch.finish());
    }

    @Test
    void bytesGoOutAsDataAndOutputShutdownAsAnEmptyEndStream() {
        ByteBuf out = bytes("abc");
        ch.writeOutbound(out, OutputShutdown.INSTANCE);
        Http2DataFrame first = ch.readOutbound();
        assertFalse(first.isEndStream());
        assertSame(out, first.content());
        first.release();
        assertEquals(0, out.refCnt());
        Http2DataFrame end = ch.readOutbound();
        assertTrue(end.isEndStream());
        assertEquals(0, end.content().readableBytes());
        end.release();
        assertNull(ch.readOutbound());
        assertFalse(ch.finish());
    }
}
