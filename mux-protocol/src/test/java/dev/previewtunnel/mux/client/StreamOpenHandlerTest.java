package dev.previewtunnel.mux.client;

import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.DefaultHttp2ResetFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.Promise;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link StreamOpenHandler}'s own contract for the answers that fail an open: each fails the promise with its typed
 * error (retryable only where the gateway never processed the stream) and ends the stream. (The accepted answer
 * needs a real stream channel: covered by the client's tests over the wire.)
 */
class StreamOpenHandlerTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    private final EmbeddedChannel ch = new EmbeddedChannel();
    private final Promise<Http2StreamChannel> promise = ch.eventLoop().newPromise();

    StreamOpenHandlerTest() {
        ch.freezeTime();
        ch.pipeline().addLast(new StreamOpenHandler(promise, TIMEOUT));
    }

    private TunnelStreamException failure() {
        assertTrue(promise.isDone(), "the open is answered");
        return assertInstanceOf(TunnelStreamException.class, promise.cause());
    }

    @Test
    void aRefusalStatusFailsTheOpenWithItsTypedError() {
        ch.writeInbound(ConnectHeaders.refused(TunnelError.GRANT_EXPIRED, "expired"));
        TunnelStreamException e = failure();
        assertEquals(TunnelError.GRANT_EXPIRED, e.error());
        assertFalse(e.retryable());
        assertFalse(ch.isOpen());
        assertFalse(ch.finish());
    }

    @Test
    void anAcceptanceThatEndsTheStreamAtOnceIsAProtocolError() {
        ch.writeInbound(new DefaultHttp2HeadersFrame(ConnectHeaders.accepted().headers(), true));
        assertEquals(TunnelError.PROTOCOL_ERROR, failure().error());
        assertFalse(ch.isOpen());
        assertFalse(ch.finish());
    }

    @Test
    void aRefusedStreamIsSafeToRetry() {
        ch.writeInbound(new DefaultHttp2ResetFrame(Http2Error.REFUSED_STREAM));
        TunnelStreamException e = failure();
        assertEquals(TunnelError.TOO_MANY_STREAMS, e.error());
        assertTrue(e.retryable(), "never processed by the gateway");
        assertFalse(ch.isOpen());
        assertFalse(ch.finish());
    }

    @Test
    void otherResetsAreNotRetried() {
        ch.writeInbound(new DefaultHttp2ResetFrame(Http2Error.CANCEL));
        TunnelStreamException e = failure();
        assertEquals(TunnelError.STREAM_RESET, e.error());
        assertFalse(e.retryable());
        assertFalse(ch.finish());
    }

    @Test
    void dataBeforeTheAnswerIsReleasedAndFailsTheOpen() {
        Http2DataFrame data = new DefaultHttp2DataFrame(Unpooled.buffer(4).writeInt(1), false);
        ch.writeInbound(data);
        assertEquals(0, data.refCnt());
        assertEquals(TunnelError.PROTOCOL_ERROR, failure().error());
        assertFalse(ch.isOpen());
        assertFalse(ch.finish());
    }

    @Test
    void noAnswerInTimeIsAGatewayTimeoutAndEndsTheStream() {
        ch.advanceTimeBy(TIMEOUT.toMillis() - 1, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        assertFalse(promise.isDone());
        ch.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        assertEquals(TunnelError.GATEWAY_TIMEOUT, failure().error());
        assertFalse(ch.isOpen());
        assertFalse(ch.finish());
    }

    @Test
    void theTunnelConnectionClosingFirstIsSafeToRetry() {
        ch.close();
        TunnelStreamException e = failure();
        assertEquals(TunnelError.STREAM_RESET, e.error());
        assertTrue(e.retryable());
        assertFalse(ch.finish());
    }

    @Test
    void anAnswerCancelsTheTimer() {
        ch.writeInbound(new DefaultHttp2ResetFrame(Http2Error.CANCEL));
        ch.advanceTimeBy(TIMEOUT.toMillis() * 2, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        assertEquals(TunnelError.STREAM_RESET, failure().error(), "the first answer stands");
        assertFalse(ch.finish());
    }
}
