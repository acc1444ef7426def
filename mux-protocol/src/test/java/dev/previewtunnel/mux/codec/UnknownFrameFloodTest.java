package dev.previewtunnel.mux.codec;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.server.MuxTestServer;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.ConnectRequest;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.testing.OnLoop;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2UnknownFrame;
import io.netty.handler.codec.http2.Http2Flags;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A peer that sends frames of an unknown type on a stream whose reader has stalled cannot make the receiver keep
 * them: they are not flow controlled, and Netty's codec passes them to the stream, whose inbound queue kept every one
 * while the stream was not reading (hostile peers, item 11 in docs/security.md).
 *
 * <p>The receiving side allocates through an unpooled allocator, whose count of live direct bytes is exact. The
 * sender answers a stream, then sends 32 MiB of unknown frames on it while its receiver never reads; then it answers
 * a second stream with a few bytes and its end. The second stream's bytes come after every unknown frame on the one
 * connection, so once they have arrived the receiver has decoded the whole flood: what is still allocated then is
 * what it kept. Without {@link UnknownFrames} it kept the whole flood.
 */
class UnknownFrameFloodTest {
    private static final Transports TRANSPORTS = Transports.best();
    private static final MuxSettings SETTINGS = MuxSettings.defaults();
    private static final int FLOOD_PORT = 1;
    private static final int LAST_PORT = 2;
    private static final int FRAMES = 512;
    private static final int FRAME_PAYLOAD = 64 * 1024 - 1024; // under the default 64 KiB frame size
    /** What the connection may hold between reads; a fraction of the 32 MiB flood. */
    private static final long BOUND = 2L << 20;

    @Test
    void unknownFramesOnAStalledStreamAreNotKept() throws Exception {
        EventLoopGroup serverLoop = TRANSPORTS.newGroup(1, "flood-server");
        EventLoopGroup clientLoop = TRANSPORTS.newGroup(1, "flood-client");
        UnpooledByteBufAllocator counted = new UnpooledByteBufAllocator(true);
        Flooder flooder = new Flooder();
        TunnelConnection connection = null;
        try (MuxTestServer server = new MuxTestServer(serverLoop, TRANSPORTS, SETTINGS, flooder)) {
            connection = new TunnelClient(clientLoop, TRANSPORTS.socketChannel(), SETTINGS)
                    .connect(URI.create("ws://127.0.0.1:" + server.port() + "/tunnel"), "secret-token", null,
                            Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            Channel parent = connection.channel();
            OnLoop.call(parent, () -> parent.config().setAllocator(counted));
            long baseline = OnLoop.call(parent, () -> counted.metric().usedDirectMemory());

            // Opened and answered, then never read: what arrives for it waits in its inbound queue.
            Http2StreamChannel stalled = connection.openStream(new Authority("localhost", FLOOD_PORT), "good",
                    Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            flooder.flooded.get(60, TimeUnit.SECONDS);

            Http2StreamChannel last = connection.openStream(new Authority("localhost", LAST_PORT), "good",
                    Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            CompletableFuture<Void> ended = new CompletableFuture<>();
            OnLoop.call(last, () -> {
                last.pipeline().addLast(new ReadToEnd(ended));
                return last.read();
            });
            ended.get(60, TimeUnit.SECONDS);

            long kept = OnLoop.call(parent, () -> counted.metric().usedDirectMemory()) - baseline;
            System.out.printf("%d KiB of unknown frames sent on a stalled stream: %d KiB of direct memory kept"
                    + " (bound %d KiB)%n", (long) FRAMES * FRAME_PAYLOAD >> 10, kept >> 10, BOUND >> 10);
            assertTrue(stalled.isActive(), "the stalled stream is still open: its queue was not emptied by a close");
            assertTrue(kept <= BOUND, "the receiver keeps " + kept + " bytes after a flood of unknown frames on a"
                    + " stalled stream (bound " + BOUND + ")");
        } finally {
            if (connection != null) {
                connection.close();
            }
            clientLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            serverLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }


    /** Answers each stream; floods {@link #FLOOD_PORT}'s with unknown frames, ends {@link #LAST_PORT}'s. */
    @ChannelHandler.Sharable
    private static final class Flooder extends ChannelInboundHandlerAdapter {
        final CompletableFuture<Void> flooded = new CompletableFuture<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            try {
                if (msg instanceof Http2HeadersFrame headers) {
                    int port = ConnectRequest.parse(headers.headers()).authority().port();
                    ctx.writeAndFlush(ConnectHeaders.accepted());
                    if (port == FLOOD_PORT) {
                        ChannelFuture lastWrite = null;
                        for (int i = 0; i < FRAMES; i++) {
                            ByteBuf payload = ctx.alloc().buffer(FRAME_PAYLOAD).writeZero(FRAME_PAYLOAD);
                            lastWrite = ctx.write(new DefaultHttp2UnknownFrame((byte) 0x2a, new Http2Flags(),
                                    payload));
                        }
                        ctx.flush();
                        lastWrite.addListener(f -> {
                            if (f.isSuccess()) {
                                flooded.complete(null);
                            } else {
                                flooded.completeExceptionally(f.cause());
                            }
                        });
                    } else {
                        ctx.writeAndFlush(new DefaultHttp2DataFrame(Unpooled.wrappedBuffer(new byte[]{1, 2, 3}),
                                true));
                    }
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }
    }

    /** Reads a stream's bytes until its end. */
    private static final class ReadToEnd extends ChannelInboundHandlerAdapter {
        private final CompletableFuture<Void> ended;

        ReadToEnd(CompletableFuture<Void> ended) {
            this.ended = ended;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.read();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                ended.complete(null);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            ended.completeExceptionally(new IllegalStateException("closed before its end"));
        }
    }
}
