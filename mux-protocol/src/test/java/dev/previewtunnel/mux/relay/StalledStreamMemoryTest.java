package dev.previewtunnel.mux.relay;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.server.MuxTestServer;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.ConnectRequest;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.testing.Await;
import dev.previewtunnel.testing.OnLoop;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
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
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A download stream whose reader stalls while other streams of its connection are busy keeps about what it queued:
 * its window in the stream channel's inbound queue and its socket's write mark, not the decoder buffers those
 * bytes were cut from (docs/performance.md, finding 62).
 *
 * <p>The receiving side (the ingress's shape: stream channels relayed to local sockets on the connection's loop)
 * allocates through an unpooled allocator, whose count of live direct bytes is exact. Eight streams download 16 MiB
 * each while a ninth, opened among them, is relayed to a socket that never reads. Once the busy streams have
 * ended, what is still allocated is what the stalled stream keeps. Before its frames got buffers of their own, the
 * same run kept several times its queued bytes (see the commit that added this test). Then the stalled reader reads:
 * every byte arrives in order, copied or not, and the stream's stalled mark is gone once it has ended.
 */
class StalledStreamMemoryTest {
    private static final Transports TRANSPORTS = Transports.best();
    private static final MuxSettings SETTINGS = MuxSettings.defaults();
    private static final int BUSY_STREAMS = 8;
    private static final long BUSY_BYTES = 16L << 20;
    private static final long STALLED_BYTES = 32L << 20; // more than the kernel's socket buffers take
    private static final int STALLED_PORT = 1;
    private static final int BUSY_PORT = 2;
    private static final int FRAME = 16 * 1024;
    /** Byte {@code i} of every stream is {@code i % 251}: a copy that loses, repeats or reorders bytes is seen. */
    private static final int PERIOD = 251;
    private static final byte[] PATTERN = new byte[PERIOD + FRAME];

    static {
        for (int i = 0; i < PATTERN.length; i++) {
            PATTERN[i] = (byte) (i % PERIOD);
        }
    }
    /**
     * The stalled stream's window (its inbound queue), its socket's high-water mark and one turn of reads beyond it
     * (its outbound buffer), and 64 KiB for what the connection itself holds between reads.
     */
    private static final long BOUND = SETTINGS.streamWindow() + SETTINGS.streamWriteHighWaterMark()
            + (long) RelayReads.MAX_READS * FRAME + (64 << 10);

    @Test
    void aStalledStreamKeepsAboutWhatItQueued() throws Exception {
        EventLoopGroup serverLoop = TRANSPORTS.newGroup(1, "stall-server");
        EventLoopGroup clientLoop = TRANSPORTS.newGroup(1, "stall-client");
        UnpooledByteBufAllocator counted = new UnpooledByteBufAllocator(true);
        Senders senders = new Senders();
        BlockingQueue<Channel> accepted = new LinkedBlockingQueue<>();
        List<Socket> sockets = new ArrayList<>();
        List<Http2StreamChannel> streams = new ArrayList<>();
        ExecutorService readers = Executors.newCachedThreadPool(); // blocking readers, one thread each
        Channel listener = null;
        TunnelConnection connection = null;
        try (MuxTestServer server = new MuxTestServer(serverLoop, TRANSPORTS, SETTINGS, senders)) {
            connection = new TunnelClient(clientLoop, TRANSPORTS.socketChannel(), SETTINGS)
                    .connect(URI.create("ws://127.0.0.1:" + server.port() + "/tunnel"), "secret-token", null,
                            Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            Channel parent = connection.channel();
            parent.eventLoop().submit(() -> parent.config().setAllocator(counted)).sync();
            listener = new ServerBootstrap().group(clientLoop).channel(TRANSPORTS.serverSocketChannel())
                    .childOption(ChannelOption.AUTO_READ, false)
                    .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(
                            SETTINGS.streamWriteLowWaterMark(), SETTINGS.streamWriteHighWaterMark()))
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.config().setAllocator(counted);
                            ReadBuffers.relayReads(ch);
                            accepted.add(ch);
                        }
                    }).bind("127.0.0.1", 0).sync().channel();
            long baseline = usedDirect(parent, counted);

            List<CompletableFuture<Long>> downloads = new ArrayList<>();
            for (int i = 0; i < BUSY_STREAMS; i++) {
                Socket reader = relayedSocket(connection, BUSY_PORT, listener, accepted, sockets, streams, counted);
                downloads.add(CompletableFuture.supplyAsync(() -> readToEnd(reader), readers));
            }
            // Opened while the others are busy: its frames arrive between theirs, as a stalled tab's do.
            Socket stalledReader = relayedSocket(connection, STALLED_PORT, listener, accepted, sockets, streams,
                    counted);
            Http2StreamChannel stalled = streams.get(streams.size() - 1);
            RelayHandler stalledRelay = (RelayHandler) stalled.pipeline().get("ptun-relay");

            for (CompletableFuture<Long> download : downloads) {
                assertEquals(BUSY_BYTES, download.get(60, TimeUnit.SECONDS), "a busy stream's bytes");
            }
            Await.until("the stalled socket unwritable", Duration.ofSeconds(30),
                    () -> !OnLoop.call(parent, () -> socketOf(stalled).isWritable()));
            // The stalled stream's window is used up once its sender's channel turns unwritable; then the bytes on
            // their way arrive.
            Await.until("the stalled stream's sender held back by its window", Duration.ofSeconds(30),
                    () -> senders.stalledChannel != null && !senders.stalledChannel.isWritable());
            Await.stalled("the stalled stream's sender", Duration.ofSeconds(30), senders.stalledSent::get,
                    new CompletableFuture<Void>()); // it never ends on its own: its reader has not read
            long kept = usedDirect(parent, counted) - baseline;
            long queued = senders.stalledSent.get() - OnLoop.call(parent, stalledRelay::bytesRead);
            System.out.printf("a stalled stream behind %d busy ones: %d KiB sent beyond what its relay read, %d KiB"
                    + " of direct memory kept in all (bound %d KiB)%n", BUSY_STREAMS, queued >> 10, kept >> 10,
                    BOUND >> 10);
            assertTrue(queued >= SETTINGS.streamWindow() / 2, "the stalled stream queued most of its window: "
                    + queued);
            assertTrue(kept <= BOUND, "the stalled stream keeps " + kept + " bytes, more than its window, its"
                    + " socket's mark and a turn of reads (" + BOUND + ")");

            assertEquals(STALLED_BYTES, readers.submit(() -> readToEnd(stalledReader)).get(60, TimeUnit.SECONDS),
                    "the stalled stream's bytes, once read");
            StalledStreams marks = parent.pipeline().get(StalledStreams.class);
            Await.until("the ended stream's stalled mark gone", Duration.ofSeconds(10),
                    () -> OnLoop.call(parent, marks::stalledCount) == 0);
        } finally {
            readers.shutdownNow();
            for (Socket s : sockets) {
                s.close();
            }
            for (Http2StreamChannel s : streams) {
                s.close().sync(); // a stream channel that is not reading keeps its queued DATA until closed
            }
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

    /** Opens a stream to {@code port}, relays it to a socket accepted from {@code listener}; returns the client. */
    private static Socket relayedSocket(TunnelConnection connection, int port, Channel listener,
                                        BlockingQueue<Channel> accepted, List<Socket> sockets,
                                        List<Http2StreamChannel> streams, UnpooledByteBufAllocator counted)
            throws Exception {
        Http2StreamChannel stream = connection.openStream(new Authority("localhost", port), "good",
                Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
        streams.add(stream);
        Socket socket = new Socket();
        sockets.add(socket);
        if (port == STALLED_PORT) {
            socket.setReceiveBufferSize(32 * 1024); // the stall reaches the relay sooner
        }
        socket.connect(listener.localAddress());
        Channel local = accepted.poll(10, TimeUnit.SECONDS);
        stream.eventLoop().submit(() -> {
            stream.config().setAllocator(counted);
            RelayHandler.link(local, stream, null);
        }).sync();
        return socket;
    }

    private static Channel socketOf(Http2StreamChannel stream) {
        RelayHandler relay = (RelayHandler) stream.pipeline().get("ptun-relay");
        return relay.peer();
    }

    /** Reads to the end, checking each byte against {@link #PATTERN}; returns the count. */
    private static long readToEnd(Socket socket) {
        byte[] buffer = new byte[64 * 1024];
        long total = 0;
        try (InputStream in = socket.getInputStream()) {
            for (int n; (n = in.read(buffer)) >= 0; ) {
                for (int i = 0; i < n; i++) {
                    if (buffer[i] != (byte) ((total + i) % PERIOD)) {
                        throw new AssertionError("byte " + (total + i) + " is " + buffer[i]);
                    }
                }
                total += n;
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return total;
    }

    /** The live direct bytes of {@code counted}, read on the connection's loop between two of its turns. */
    private static long usedDirect(Channel parent, UnpooledByteBufAllocator counted) throws Exception {
        return OnLoop.call(parent, () -> counted.metric().usedDirectMemory());
    }


    /**
     * Answers each stream, then sends {@link #BUSY_BYTES} to {@link #BUSY_PORT}, {@link #STALLED_BYTES} to {@link
     * #STALLED_PORT}, and the end of the stream. Writes only while the stream channel is writable, so the
     * flow-control window holds the sender back.
     */
    @ChannelHandler.Sharable
    private static final class Senders extends ChannelInboundHandlerAdapter {
        final AtomicLong stalledSent = new AtomicLong();
        volatile Channel stalledChannel;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            try {
                if (msg instanceof Http2HeadersFrame headers) {
                    int port = ConnectRequest.parse(headers.headers()).authority().port();
                    ctx.writeAndFlush(ConnectHeaders.accepted());
                    if (port == STALLED_PORT) {
                        stalledChannel = ctx.channel();
                    }
                    Pump pump = port == STALLED_PORT ? new Pump(STALLED_BYTES, stalledSent) : new Pump(BUSY_BYTES,
                            new AtomicLong());
                    ctx.pipeline().addLast(pump);
                    ctx.pipeline().remove(this);
                    pump.pump(ctx.pipeline().context(pump));
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }
    }

    private static final class Pump extends ChannelInboundHandlerAdapter {
        private final long total;
        private final AtomicLong sent;
        private boolean ended;

        Pump(long total, AtomicLong sent) {
            this.total = total;
            this.sent = sent;
        }

        void pump(ChannelHandlerContext ctx) {
            while (ctx.channel().isActive() && ctx.channel().isWritable() && sent.get() < total) {
                int n = (int) Math.min(FRAME, total - sent.get());
                ByteBuf data = ctx.alloc().buffer(n);
                data.writeBytes(PATTERN, (int) (sent.get() % PERIOD), n);
                ctx.write(new DefaultHttp2DataFrame(data, false));
                sent.addAndGet(n);
            }
            if (ctx.channel().isActive() && sent.get() == total && !ended) {
                ended = true;
                ctx.write(new DefaultHttp2DataFrame(Unpooled.EMPTY_BUFFER, true));
            }
            ctx.flush();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            pump(ctx);
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
        }
    }
}
