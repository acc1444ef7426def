package dev.previewtunnel.mux.relay;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.server.MuxTestServer;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.testing.Await;
import dev.previewtunnel.testing.OnLoop;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2ResetFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;

import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a stalled stream's peer can make its receiver keep (hostile peers, item 11 in docs/security.md).
 *
 * <p>The receiving side relays the stream to a socket that never reads (small socket buffers and write mark, so the
 * relay stalls well inside the stream's 1 MiB window). The sender sends 512 KiB in 16 KiB frames and the test waits
 * until the receiver's relay has stopped reading. Then either the sender sends more 1-byte DATA frames than a stalled
 * stream may queue, which its remaining window allows: the receiver must answer with RST_STREAM {@code
 * ENHANCE_YOUR_CALM} and close the relayed socket (without the limit it queued every frame and the stream stayed
 * open). Or the sender resets the stream: the receiver must close it at once rather than keep its queued frames
 * until the socket reads (without that, the stream channel stayed open with them).
 */
class StalledStreamLimitsTest {
    private static final Transports TRANSPORTS = Transports.best();
    private static final MuxSettings SETTINGS = MuxSettings.defaults();
    private static final int FILLER_FRAME = 16 * 1024;
    /**
     * Half the stream's 1 MiB window, so that half is left for the 1-byte frames whatever window updates the receiver
     * has sent by then; enough to stall the relay, whose socket takes its 64 KiB write mark and small kernel buffers.
     */
    private static final int FILLER_BYTES = 512 * 1024;
    private static final int TINY_FRAMES = StalledStreams.MIN_QUEUED_FRAMES + 4_096;

    @Test
    void aStalledStreamFedOneByteFramesIsReset() throws Exception {
        stallThen((sending, sender) -> sending.eventLoop().execute(() -> sender.sendTiny(sending)), (sender, stall) -> {
            assertEquals(SETTINGS.streamWindow() / 64, stall.marks.maxQueuedFrames(), "the default window's limit");
            assertEquals(Http2Error.ENHANCE_YOUR_CALM.code(), sender.reset.get(30, TimeUnit.SECONDS),
                    "the receiver's answer to the flood");
        });
    }

    @Test
    void aStalledStreamResetByItsPeerIsClosedAtOnce() throws Exception {
        stallThen((sending, sender) -> sending.eventLoop().execute(() -> sending.writeAndFlush(
                new DefaultHttp2ResetFrame(Http2Error.CANCEL))), (sender, stall) -> {
        });
    }

    private interface Action<A, B> {
        void run(A a, B b) throws Exception;
    }

    /** What the receiving side has once its relay stalled. */
    private record Stall(StalledStreams marks, Http2StreamChannel stream, Channel local) {
    }

    /**
     * Stalls a relayed stream, runs {@code act} on the sending side, then {@code check}, then asserts that the
     * receiving side has closed the stream and its socket and kept no mark, and that the connection is up.
     */
    private static void stallThen(Action<Channel, Sender> act, Action<Sender, Stall> check) throws Exception {
        EventLoopGroup serverLoop = TRANSPORTS.newGroup(1, "limits-server");
        EventLoopGroup clientLoop = TRANSPORTS.newGroup(1, "limits-client");
        Sender sender = new Sender();
        BlockingQueue<Channel> accepted = new LinkedBlockingQueue<>();
        Channel listener = null;
        TunnelConnection connection = null;
        try (MuxTestServer server = new MuxTestServer(serverLoop, TRANSPORTS, SETTINGS, sender);
             Socket neverReads = new Socket()) {
            connection = new TunnelClient(clientLoop, TRANSPORTS.socketChannel(), SETTINGS)
                    .connect(URI.create("ws://127.0.0.1:" + server.port() + "/tunnel"), "secret-token", null,
                            Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            Channel parent = connection.channel();
            listener = new ServerBootstrap().group(clientLoop).channel(TRANSPORTS.serverSocketChannel())
                    .childOption(ChannelOption.AUTO_READ, false)
                    .childOption(ChannelOption.SO_SNDBUF, 32 * 1024)
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(32 * 1024, 64 * 1024))
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ReadBuffers.relayReads(ch);
                            accepted.add(ch);
                        }
                    }).bind("127.0.0.1", 0).sync().channel();

            Http2StreamChannel stream = connection.openStream(new Authority("localhost", 1), "good",
                    Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            neverReads.setReceiveBufferSize(32 * 1024);
            neverReads.connect(listener.localAddress());
            Channel local = accepted.poll(10, TimeUnit.SECONDS);
            stream.eventLoop().submit(() -> RelayHandler.link(local, stream, null)).sync();

            StalledStreams marks = parent.pipeline().get(StalledStreams.class);
            Await.until("the relay stalled by the socket that never reads", Duration.ofSeconds(30),
                    () -> OnLoop.call(parent, marks::stalledCount) == 1);
            Channel sending = sender.stream.get(10, TimeUnit.SECONDS);
            act.run(sending, sender);
            check.run(sender, new Stall(marks, stream, local));

            Await.until("the relayed socket closed", Duration.ofSeconds(10), () -> !local.isActive());
            Await.until("the stream closed on the receiving side", Duration.ofSeconds(10), () -> !stream.isActive());
            assertEquals(0, OnLoop.call(parent, marks::stalledCount), "no stalled mark left");
            assertTrue(parent.isActive(), "the connection itself stays up");
        } finally {
            if (listener != null) {
                listener.close().sync();
            }
            if (connection != null) {
                connection.close();
            }
            clientLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            serverLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }


    /** Answers the stream, sends {@link #FILLER_BYTES} as its window allows; on request, the 1-byte frames. */
    @ChannelHandler.Sharable
    private static final class Sender extends ChannelInboundHandlerAdapter {
        final CompletableFuture<Channel> stream = new CompletableFuture<>();
        final CompletableFuture<Long> reset = new CompletableFuture<>();
        private long sent;
        private int tinySent;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof Http2HeadersFrame) {
                    ctx.writeAndFlush(ConnectHeaders.accepted());
                    stream.complete(ctx.channel());
                    fill(ctx.channel());
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            fill(ctx.channel());
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof Http2ResetFrame rst) {
                reset.complete(rst.errorCode());
            }
            ReferenceCountUtil.release(evt);
        }

        private void fill(Channel ch) {
            while (ch.isActive() && ch.isWritable() && sent < FILLER_BYTES) {
                ByteBuf data = ch.alloc().buffer(FILLER_FRAME).writeZero(FILLER_FRAME);
                ch.write(new DefaultHttp2DataFrame(data, false));
                sent += FILLER_FRAME;
            }
            ch.flush();
        }

        /**
         * Far more 1-byte frames than a stalled stream may queue, each flushed alone (Netty's encoder merges the DATA
         * frames that wait unflushed in its flow controller into one), a batch per event-loop task so that the sender
         * hears the reset and stops. A reset stream fails the rest.
         */
        void sendTiny(Channel ch) {
            for (int i = 0; i < 512 && tinySent < TINY_FRAMES && ch.isActive(); i++, tinySent++) {
                ch.writeAndFlush(new DefaultHttp2DataFrame(ch.alloc().buffer(1).writeByte(i), false));
            }
            if (tinySent < TINY_FRAMES && ch.isActive()) {
                ch.eventLoop().execute(() -> sendTiny(ch));
            }
        }
    }
}
