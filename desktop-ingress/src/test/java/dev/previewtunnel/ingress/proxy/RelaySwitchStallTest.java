package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.AcceptThenFlood;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.relay.WindowPacedFlood;
import dev.previewtunnel.mux.server.MuxTestServer;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.testing.HeldWrites;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile peers, item 11 (docs/security.md), in the window between the {@code 200} (or {@code 101}) the browser is
 * sent and the relay's link: nothing reads the stream then, so {@link RelaySwitch#answerThenComplete} marks it
 * stalled. Here the browser never takes the answer (its write is held, as a full connection holds it) and the peer
 * then sends the stream's window one byte per DATA frame: the stream must be reset ({@code ENHANCE_YOUR_CALM}) at a
 * stalled stream's limit, not queue a frame object per byte. Without the mark no reset came.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class RelaySwitchStallTest {
    /** Well past the limit (16,384 frames at the default window) and far below what would strain the test's heap. */
    private static final int MAX_FRAMES = 60_000;

    @Test
    void aStreamWaitingForItsAnswerToBeTakenIsResetWhenFloodedOneByteAFrame() throws Exception {
        WindowPacedFlood flood = new WindowPacedFlood(512 * 1024, MAX_FRAMES);
        Transports transports = Transports.best();
        EventLoopGroup gatewayLoop = transports.newGroup(1, "switch-gateway");
        EventLoopGroup ingressLoop = transports.newGroup(1, "switch-ingress");
        HeldWrites held = new HeldWrites(); // the browser's side of a full connection
        ChannelInboundHandlerAdapter proxy = new ChannelInboundHandlerAdapter();
        EmbeddedChannel browser = new EmbeddedChannel(held, proxy);
        Http2StreamChannel stream = null;
        TunnelConnection connection = null;
        try (MuxTestServer gateway = new MuxTestServer(gatewayLoop, transports, MuxSettings.defaults(),
                new AcceptThenFlood(flood, null))) { // floods once the ingress says go (after its mark)
            connection = new TunnelClient(ingressLoop, transports.socketChannel(), MuxSettings.defaults())
                    .connect(URI.create("ws://127.0.0.1:" + gateway.port() + "/tunnel"), "secret-token", null,
                            Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            Http2StreamChannel opened = connection.openStream(new Authority("localhost", 5173), "good",
                    Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            stream = opened;
            opened.eventLoop().submit(() -> {
                new RelaySwitch(browser, proxy, new PipelinedRequests()).answerThenComplete(
                        new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK), opened, () -> { });
                opened.writeAndFlush(new DefaultHttp2DataFrame(Unpooled.wrappedBuffer(new byte[]{'g'})));
            }).sync();

            long reset;
            try {
                reset = flood.reset.get(60, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("no reset within 60 s: " + flood.fillerBytes.get() + " filler bytes, "
                        + flood.sent.get() + " one-byte frames sent (at most " + MAX_FRAMES + ")", e);
            }
            assertEquals(1, held.count(), "the browser's answer is still waiting to be taken");
            assertEquals(Http2Error.ENHANCE_YOUR_CALM.code(), reset, "the stream was reset for another reason");
            assertTrue(flood.sent.get() < MAX_FRAMES, () -> flood.sent.get() + " frames before the reset");
            opened.closeFuture().await(10, TimeUnit.SECONDS);
            assertFalse(opened.isActive(), "the reset stream is closed on the ingress's side");
        } finally {
            if (stream != null) {
                // The browser leaves: its held answer fails (the switch then closes the stream, if still open).
                stream.eventLoop().submit(() -> {
                    held.failAll();
                    browser.finishAndReleaseAll();
                }).sync();
            } else {
                browser.finishAndReleaseAll();
            }
            if (connection != null) {
                connection.close();
            }
            ingressLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            gatewayLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
