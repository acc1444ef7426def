package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.mux.relay.StreamStaller;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.server.MuxTestServer;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.PrematureChannelClosureException;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2PingFrame;
import io.netty.handler.codec.http2.DefaultHttp2ResetFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2PingFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile peers, item 11, what it must not cost an honest browser (docs/security.md): a target answers in full and
 * then resets its connection (the gateway resets the stream), while the browser is behind, so that the end of the
 * answer waits in the ingress's stalled stream when the reset arrives. The browser must still get the whole answer.
 * The gateway here is a frame-level test server: it answers with a chunked body, 64 KiB a chunk, until the ingress
 * has stopped reading the stream ({@link StreamStaller}), then sends the last chunk, the reset, and a PING whose
 * acknowledgement says the ingress has read the reset; only then does the browser start reading. Before the ingress's
 * exchanges left such a stream to be read ({@code StalledStreams.OnReset.DRAIN}) it closed the stream at the reset and
 * cut the browser's answer short.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ResetAfterStalledAnswerTest {
    private static final int CHUNK = 64 * 1024;
    private static final long PING = 0x5EED;

    @TempDir
    Path dir;

    @Test
    void anAnswerQueuedWholeBeforeAResetReachesTheBrowserWhole() throws Exception {
        AnswerThenReset target = new AnswerThenReset();
        EventLoopGroup group = Transports.best().newGroup(1, "reset-gateway");
        try (MuxTestServer gateway = new MuxTestServer(group, Transports.best(), MuxSettings.defaults(), target);
             IngressBeforeTestGateway ingress = new IngressBeforeTestGateway(gateway.port(), dir.resolve("keys"),
                     "env-a");
             Socket browser = ingress.slowBrowserGet("/answer-then-reset")) {
            target.resetRead.get(60, TimeUnit.SECONDS);
            long chunks = target.chunks.get();
            System.out.printf("RESET AFTER A STALLED ANSWER: %d chunks of 64 KiB and the last chunk sent, then the"
                    + " reset; the ingress has read it, the browser reads now%n", chunks);
            browser.setSoTimeout(30_000);
            FullHttpResponse answer = readAnswer(browser.getInputStream());
            try {
                assertEquals(200, answer.status().code());
                assertEquals(chunks * CHUNK, answer.content().readableBytes(), "the body's bytes");
                for (int i = 0; i < answer.content().readableBytes(); i++) {
                    if (answer.content().getByte(i) != 'x') {
                        throw new AssertionError("byte " + i + " of the body is not the target's");
                    }
                }
            } finally {
                answer.release();
            }
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** The browser's bytes through Netty's response decoder until one whole answer; fails if the connection ends. */
    private static FullHttpResponse readAnswer(InputStream in) throws Exception {
        EmbeddedChannel decoder = new EmbeddedChannel(new HttpResponseDecoder(),
                new HttpObjectAggregator(64 * 1024 * 1024));
        try {
            byte[] buf = new byte[64 * 1024];
            long total = 0;
            while (true) {
                int n = in.read(buf);
                if (n < 0) {
                    throw new AssertionError("the browser connection ended after " + total
                            + " bytes, before the answer's end");
                }
                total += n;
                decoder.writeInbound(Unpooled.copiedBuffer(buf, 0, n));
                FullHttpResponse answer = decoder.readInbound();
                if (answer != null) {
                    assertTrue(answer.decoderResult().isSuccess(), () -> "malformed: " + answer.decoderResult());
                    return answer;
                }
            }
        } finally {
            try {
                decoder.finishAndReleaseAll();
            } catch (PrematureChannelClosureException cutShort) {
                // The answer was cut short: the assertion above, not the decoder's complaint, says so.
            }
        }
    }

    /**
     * Accepts the stream, answers the request with a chunked body until the ingress stops reading it, ends the body,
     * resets the stream once the end has been written, then pings the connection.
     */
    @ChannelHandler.Sharable
    private static final class AnswerThenReset extends ChannelInboundHandlerAdapter {
        final AtomicLong chunks = new AtomicLong();
        /** Completed when the PING sent after the reset is acknowledged: the ingress has read the reset. */
        final CompletableFuture<Void> resetRead = new CompletableFuture<>();
        private boolean answered;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Http2HeadersFrame) {
                ctx.writeAndFlush(ConnectHeaders.accepted());
            } else if (msg instanceof Http2DataFrame && !answered) {
                answered = true; // the request
                Http2StreamChannel stream = (Http2StreamChannel) ctx.channel();
                if (!watchPingAck(stream.parent())) {
                    ReferenceCountUtil.release(msg);
                    return;
                }
                ctx.writeAndFlush(new DefaultHttp2DataFrame(Unpooled.copiedBuffer(
                        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", StandardCharsets.US_ASCII)));
                new StreamStaller(448 * 1024, this::chunk).start(stream, stream::isActive, () -> end(stream));
            }
            ReferenceCountUtil.release(msg);
        }

        private ByteBuf chunk() {
            chunks.incrementAndGet();
            byte[] data = new byte[CHUNK];
            java.util.Arrays.fill(data, (byte) 'x');
            return Unpooled.wrappedBuffer(Unpooled.copiedBuffer(Integer.toHexString(CHUNK) + "\r\n",
                    StandardCharsets.US_ASCII), Unpooled.wrappedBuffer(data), Unpooled.copiedBuffer("\r\n",
                    StandardCharsets.US_ASCII));
        }

        /** The last chunk; once written (not before: a reset would discard DATA still waiting), the reset and a PING. */
        private void end(Http2StreamChannel stream) {
            stream.writeAndFlush(new DefaultHttp2DataFrame(Unpooled.copiedBuffer("0\r\n\r\n",
                    StandardCharsets.US_ASCII))).addListener(written -> {
                if (!written.isSuccess()) {
                    resetRead.completeExceptionally(written.cause());
                    return;
                }
                stream.writeAndFlush(new DefaultHttp2ResetFrame(Http2Error.CANCEL));
                stream.parent().writeAndFlush(new DefaultHttp2PingFrame(PING));
            });
        }

        /** Right after the codec, before anything that answers or counts PINGs of its own; false if there is none. */
        private boolean watchPingAck(Channel connection) {
            ChannelHandlerContext codec = connection.pipeline().context(Http2FrameCodec.class);
            if (codec == null) {
                resetRead.completeExceptionally(new AssertionError("no HTTP/2 codec on the test gateway's connection"));
                return false;
            }
            connection.pipeline().addAfter(codec.name(), "test-ping-ack", new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    if (msg instanceof Http2PingFrame ping && ping.ack() && ping.content() == PING) {
                        resetRead.complete(null);
                    }
                    ctx.fireChannelRead(msg);
                }
            });
            return true;
        }
    }
}
