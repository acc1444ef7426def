package dev.previewtunnel.mux;

import dev.previewtunnel.testing.Await;
import dev.previewtunnel.testing.ReadTurns;
import dev.previewtunnel.testing.Uploads;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;

import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An upload relayed from a socket into a tunnel stream on the same event loop (the ingress: a browser socket and the
 * stream of a connection of its own loop), to a peer that never reads: what the relay holds stays within the
 * stream's window, its write high-water mark and a turn of reads. (Towards a stream on another loop, whose channel
 * counted a handed-over write at 9 bytes until it ran, it did not: docs/performance.md finding 15; link now refuses
 * two loops.)
 */
class RelayToStalledStreamTest {
    private static final Transports TRANSPORTS = Transports.best();
    private static final MuxSettings SETTINGS = MuxSettings.defaults();
    private static final int UPLOAD = 24 << 20;
    /** Window, the stream's write mark, and two turns of reads (one in flight when the stream turned unwritable). */
    private static final long BOUND = SETTINGS.streamWindow() + SETTINGS.streamWriteHighWaterMark()
            + 2L * RelayReads.MAX_READS * ReadBuffers.MAX_READ;

    @Test
    void anUploadToAStalledStreamHoldsNoMoreThanTheWindowAndTheMark() throws Exception {
        EventLoopGroup serverLoop = TRANSPORTS.newGroup(1, "upl-server");
        EventLoopGroup tunnelLoop = TRANSPORTS.newGroup(1, "upl-tunnel");
        NeverReads neverReads = new NeverReads();
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        ReadTurns reads = new ReadTurns();
        Channel listener = null;
        Channel socket = null;
        TunnelConnection connection = null;
        Socket uploader = null;
        try (MuxTestServer server = new MuxTestServer(serverLoop, TRANSPORTS, SETTINGS, neverReads)) {
            connection = new TunnelClient(tunnelLoop, TRANSPORTS.socketChannel(), SETTINGS)
                    .connect(URI.create("ws://127.0.0.1:" + server.port() + "/tunnel"), "secret-token", null,
                            Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            Http2StreamChannel stream = connection.openStream(new Authority("localhost", 5173), "good",
                    Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            listener = new ServerBootstrap().group(tunnelLoop).channel(TRANSPORTS.serverSocketChannel())
                    .childOption(ChannelOption.AUTO_READ, false)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ReadBuffers.relayReads(ch);
                            ch.pipeline().addLast(reads);
                            accepted.complete(ch);
                        }
                    }).bind("127.0.0.1", 0).sync().channel();
            uploader = new Socket();
            uploader.connect(listener.localAddress());
            socket = accepted.get(10, TimeUnit.SECONDS);

            RelayHandler.link(socket, stream, null);
            RelayHandler relay = (RelayHandler) socket.pipeline().get("ptun-relay");
            socket.eventLoop().submit(() -> { }).sync(); // the socket's relay is in place and asked for a read
            reads.watch();
            OutputStream out = uploader.getOutputStream();
            CompletableFuture.runAsync(() -> Uploads.send(out, UPLOAD));
            Channel relayed = socket;

            Await.until("the relay stopped reading into the stalled stream, or read beyond " + BOUND,
                    Duration.ofSeconds(30), () -> reads.stoppedWithoutAsking() || relay.bytesRead() > BOUND);
            Await.until("the stalled stream unwritable", Duration.ofSeconds(30), () -> !stream.isWritable());
            for (int i = 0; i < 3; i++) { // a turn in flight and the read it may ask for
                relayed.eventLoop().submit(() -> { }).sync();
            }

            long held = relay.bytesRead() - neverReads.consumed.get();
            System.out.printf("relay read %d bytes, the stalled peer consumed %d: %d held on the relay's side"
                    + " (bound %d)%n", relay.bytesRead(), neverReads.consumed.get(), held, BOUND);
            assertTrue(held <= BOUND, "held " + held + " bytes, more than window + mark + two turns = " + BOUND);
        } finally {
            if (uploader != null) {
                uploader.close();
            }
            if (socket != null) {
                socket.close().sync(); // the relay resets the stream
            }
            if (listener != null) {
                listener.close().sync();
            }
            for (Channel stalled : neverReads.streams) {
                // Closed by hand: a stream channel that is not reading keeps its queued DATA when the stream ends.
                stalled.close().sync();
            }
            if (connection != null) {
                connection.close();
            }
            tunnelLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            serverLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** Accepts every stream and never reads its DATA: the stream's window fills and stays full. */
    @ChannelHandler.Sharable
    private static final class NeverReads extends ChannelInboundHandlerAdapter {
        /** DATA bytes read anyway (one read may be in progress when auto-read is turned off). */
        final AtomicLong consumed = new AtomicLong();
        final Queue<Channel> streams = new ConcurrentLinkedQueue<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Http2HeadersFrame) {
                ctx.channel().config().setAutoRead(false);
                streams.add(ctx.channel());
                ctx.writeAndFlush(StreamResponses.accepted());
            } else if (msg instanceof Http2DataFrame data) {
                consumed.addAndGet(data.content().readableBytes());
            }
            ReferenceCountUtil.release(msg);
        }
    }
}
