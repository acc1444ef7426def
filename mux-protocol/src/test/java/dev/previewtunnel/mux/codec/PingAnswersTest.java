package dev.previewtunnel.mux.codec;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link PingAnswers}' own contract: one PONG in flight; while it is unwritten only the newest ping waits (older
 * payloads released); past {@link PingAnswers#MAX_UNANSWERED} the caller is told to close.
 */
class PingAnswersTest {
    /** Holds writes (a peer that does not read) until {@link #writeOne}. */
    static final class Socket extends ChannelOutboundHandlerAdapter {
        final ArrayDeque<Object[]> held = new ArrayDeque<>();

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            held.add(new Object[] {msg, promise});
        }

        /** The peer reads one: the held write completes and its frame is released. */
        String writeOne(boolean ok) {
            Object[] w = held.poll();
            PongWebSocketFrame pong = (PongWebSocketFrame) w[0];
            String payload = pong.content().toString(StandardCharsets.US_ASCII);
            pong.release();
            if (ok) {
                ((ChannelPromise) w[1]).setSuccess();
            } else {
                ((ChannelPromise) w[1]).setFailure(new IOException("reset"));
            }
            return payload;
        }
    }

    private final Socket socket = new Socket();
    private ChannelHandlerContext ctx;
    private final EmbeddedChannel ch = new EmbeddedChannel(socket, new ChannelInboundHandlerAdapter() {
        @Override
        public void handlerAdded(ChannelHandlerContext c) {
            ctx = c;
        }
    });
    private final PingAnswers answers = new PingAnswers();

    private static ByteBuf payload(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    @Test
    void onlyTheNewestPingWaitsBehindThePongInFlight() {
        ByteBuf p1 = payload("1");
        ByteBuf p2 = payload("2");
        ByteBuf p3 = payload("3");
        assertTrue(answers.answer(ctx, p1));
        assertEquals(1, socket.held.size(), "answered at once");
        assertTrue(answers.answer(ctx, p2));
        assertTrue(answers.answer(ctx, p3));
        assertEquals(1, socket.held.size(), "one PONG in flight, not one per ping");
        assertEquals(0, p2.refCnt(), "an older waiting ping is released when a newer one arrives");

        assertEquals("1", socket.writeOne(true));
        assertEquals(1, socket.held.size(), "the newest waiting ping is answered once the first PONG is written");
        assertEquals("3", socket.writeOne(true));
        assertTrue(socket.held.isEmpty());
        assertEquals(0, p1.refCnt());
        assertEquals(0, p3.refCnt());
        assertFalse(ch.finish());
    }

    @Test
    void aPeerThatLeavesTooManyPingsUnansweredIsToldApart() {
        assertTrue(answers.answer(ctx, payload("first")));
        for (int i = 0; i < PingAnswers.MAX_UNANSWERED; i++) {
            assertTrue(answers.answer(ctx, payload("n")), "a pinging peer within the limit");
        }
        assertFalse(answers.answer(ctx, payload("one too many")), "the caller closes the connection");
        answers.release();
        socket.writeOne(false);
        assertNull(socket.held.peek());
        assertFalse(ch.finish());
    }

    /** One PONG in flight and one ping waiting behind it; returns the waiting ping's payload. */
    private ByteBuf oneWaiting() {
        ByteBuf waiting = payload("w");
        answers.answer(ctx, payload("a"));
        answers.answer(ctx, waiting);
        return waiting;
    }

    @Test
    void aFailedPongReleasesTheWaitingPing() {
        ByteBuf waiting = oneWaiting();
        socket.writeOne(false);
        assertEquals(0, waiting.refCnt());
        assertTrue(socket.held.isEmpty(), "nothing more is sent on a connection whose write failed");
        assertFalse(ch.finish());
    }

    @Test
    void releaseFreesTheWaitingPayloadOnce() {
        ByteBuf waiting = oneWaiting();
        answers.release();
        assertEquals(0, waiting.refCnt());
        answers.release(); // a second end of the connection releases nothing twice
        socket.writeOne(true);
        assertTrue(socket.held.isEmpty());
        assertFalse(ch.finish());
    }
}
