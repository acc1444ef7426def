package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.sampleapp.RawEchoServer;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import dev.previewtunnel.testing.Await;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32;

import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Raw streams through CONNECT: WebSocket echo, half-close, and a slow reader with bounded memory. */
class ChainRawStreamTest {
    static SampleApp app;
    static TunnelStack stack;
    static EventLoopGroup clientGroup;

    @BeforeAll
    static void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        stack = TunnelStack.start(2);
        stack.grant("localhost", app.port());
        clientGroup = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    }

    @AfterAll
    static void stop() {
        clientGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        stack.close();
        app.close();
    }

    @Test
    void webSocketEchoThroughConnectThousandRoundTrips() throws Exception {
        HttpClient client = ProxyClients.httpClient(stack.proxy(), stack.session());
        AtomicReference<CompletableFuture<String>> next = new AtomicReference<>(new CompletableFuture<>());
        WebSocket ws = client.newWebSocketBuilder().buildAsync(URI.create("ws://localhost:" + app.port() + "/ws"),
                new WebSocket.Listener() {
                    final StringBuilder partial = new StringBuilder();

                    @Override
                    public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
                        partial.append(data);
                        if (last) {
                            next.get().complete(partial.toString());
                            partial.setLength(0);
                        }
                        webSocket.request(1);
                        return null;
                    }
                }).get(20, TimeUnit.SECONDS);
        for (int i = 0; i < 1000; i++) {
            CompletableFuture<String> reply = new CompletableFuture<>();
            next.set(reply);
            String message = "round-trip-" + i;
            ws.sendText(message, true).get(10, TimeUnit.SECONDS);
            assertEquals(message, reply.get(10, TimeUnit.SECONDS));
        }
        ws.sendClose(WebSocket.NORMAL_CLOSURE, "done").get(10, TimeUnit.SECONDS);
    }

    /**
     * A target that speaks first (a banner, then its FIN) puts bytes right behind the CONNECT's 200, the moment
     * at which a stream could be read before its relay is in place; every one of many streams must get them all.
     */
    @Test
    void bytesTheTargetSendsFirstReachEveryStream() throws Exception {
        try (RawSourceServer banner = new RawSourceServer(10)) {
            stack.grant("localhost", banner.port());
            for (int i = 0; i < 200; i++) {
                CompletableFuture<Long> received = new CompletableFuture<>();
                AtomicLong count = new AtomicLong();
                ProxyClients.connectTunnel(clientGroup, stack.proxy(), stack.session(), "localhost", banner.port(),
                        new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                count.addAndGet(((ByteBuf) msg).readableBytes());
                                ((ByteBuf) msg).release();
                            }

                            @Override
                            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                                if (evt instanceof ChannelInputShutdownEvent) {
                                    received.complete(count.get());
                                    ctx.close();
                                }
                            }

                            @Override
                            public void channelInactive(ChannelHandlerContext ctx) {
                                received.complete(count.get());
                            }
                        }, true);
                assertEquals(10L, received.get(10, TimeUnit.SECONDS), "bytes on stream " + i);
            }
        }
    }

    @Test
    void halfCloseStillDeliversTheWholeResponse() throws Exception {
        try (RawEchoServer echo = RawEchoServer.start("127.0.0.1", 0)) {
            stack.grant("localhost", echo.port());
            ByteArrayOutputStream received = new ByteArrayOutputStream();
            CompletableFuture<Void> closed = new CompletableFuture<>();
            Channel ch = ProxyClients.connectTunnel(clientGroup, stack.proxy(), stack.session(), "localhost",
                    echo.port(), new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            ByteBuf buf = (ByteBuf) msg;
                            byte[] b = new byte[buf.readableBytes()];
                            buf.readBytes(b);
                            buf.release();
                            received.write(b, 0, b.length);
                        }

                        @Override
                        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                            if (evt instanceof ChannelInputShutdownEvent) {
                                closed.complete(null); // the target's FIN, relayed as END_STREAM then FIN
                                ctx.close();
                            }
                        }

                        @Override
                        public void channelInactive(ChannelHandlerContext ctx) {
                            closed.completeExceptionally(new IllegalStateException("closed without a FIN first"));
                        }
                    }, true);
            byte[] payload = new byte[1024 * 1024 + 3];
            new Random(7).nextBytes(payload);
            ch.writeAndFlush(Unpooled.wrappedBuffer(payload)).sync();
            // The client is done sending; the target answers only after it sees our FIN.
            ((DuplexChannel) ch).shutdownOutput().sync();
            closed.get(20, TimeUnit.SECONDS);
            assertEquals(payload.length + "\n", received.toString(StandardCharsets.US_ASCII));
        }
    }

    /**
     * The browser sends its request and half-closes; the target answers 32 MiB once it sees that FIN, and the browser
     * reads only once the answer has backed up to the target: the whole answer arrives, through ingress and gateway.
     * The ingress's socket to the browser has then had its input end, nothing to read or write for a while, and then
     * had to wait for room to write: with Netty's epoll handler unwrapped (no EpollStayRegistered) that wait failed
     * (epoll_ctl MOD: ENOENT), its output was shut and the browser got about 4 MiB (finding 56, end to end).
     */
    @Test
    void aLargeAnswerAfterTheBrowsersFinArrivesWhole() throws Exception {
        int size = 32 << 20;
        CompletableFuture<Channel> answering = new CompletableFuture<>();
        AtomicLong sent = new AtomicLong(); // bytes of the answer the target's socket has taken
        Channel target = new ServerBootstrap().group(clientGroup)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ((ByteBuf) msg).release();
                    }

                    @Override
                    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                        if (evt instanceof ChannelInputShutdownEvent) {
                            answering.complete(ctx.channel());
                            sendThenHalfClose(ctx.channel(), size, sent);
                        }
                    }
                })
                .bind("127.0.0.1", 0).sync().channel();
        Channel browser = null;
        try {
            int port = ((InetSocketAddress) target.localAddress()).getPort();
            stack.grant("localhost", port);
            AtomicLong received = new AtomicLong();
            CompletableFuture<Void> ended = new CompletableFuture<>();
            browser = ProxyClients.connectTunnel(clientGroup, stack.proxy(), stack.session(), "localhost",
                    port, new CountingReader(received, ended), false);
            browser.writeAndFlush(Unpooled.copiedBuffer("request", StandardCharsets.US_ASCII)).sync();
            ((DuplexChannel) browser).shutdownOutput().sync();
            answering.get(20, TimeUnit.SECONDS);
            // Backed up to the target: the ingress waits for room on the browser's socket.
            long takenAtStall = Await.stalled("the target's answer", Duration.ofSeconds(10), sent::get, ended);
            browser.config().setAutoRead(true);
            ended.get(60, TimeUnit.SECONDS);
            assertEquals(size, received.get(), "bytes of the answer that reached the browser");
            assertTrue(takenAtStall < size, "the whole answer left the target before the browser read: not tested");
        } finally {
            closeAll(browser, answering, target);
        }
    }

    /**
     * The mirror case, on the gateway: the target speaks first and half-closes at once, then reads a 32 MiB upload
     * only once it has backed up to the browser. The gateway's socket to the target then has nothing to read (its
     * input ended) and nothing to write for a while, and must then wait for room to write the upload.
     */
    @Test
    void aLargeUploadAfterTheTargetsFinArrivesWhole() throws Exception {
        int size = 32 << 20;
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        AtomicLong received = new AtomicLong();
        CompletableFuture<Void> uploadEnded = new CompletableFuture<>();
        Channel target = new ServerBootstrap().group(clientGroup)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new CountingReader(received, uploadEnded) {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        accepted.complete(ctx.channel());
                        ctx.writeAndFlush(Unpooled.copiedBuffer("banner", StandardCharsets.US_ASCII))
                                .addListener(f -> ((DuplexChannel) ctx.channel()).shutdownOutput());
                    }
                })
                .bind("127.0.0.1", 0).sync().channel();
        Channel browser = null;
        try {
            int port = ((InetSocketAddress) target.localAddress()).getPort();
            stack.grant("localhost", port);
            CompletableFuture<Void> targetsFin = new CompletableFuture<>();
            browser = ProxyClients.connectTunnel(clientGroup, stack.proxy(), stack.session(), "localhost",
                    port, new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            ((ByteBuf) msg).release();
                        }

                        @Override
                        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                            if (evt instanceof ChannelInputShutdownEvent) {
                                targetsFin.complete(null); // the browser keeps sending
                            }
                        }
                    }, true);
            // The target's FIN has come through: the gateway has seen its socket's input end.
            targetsFin.get(20, TimeUnit.SECONDS);
            AtomicLong sent = new AtomicLong();
            sendThenHalfClose(browser, size, sent);
            // Backed up to the browser: the gateway waits for room on the target's socket.
            long takenAtStall = Await.stalled("the browser's upload", Duration.ofSeconds(10), sent::get,
                    uploadEnded);
            accepted.join().config().setAutoRead(true);
            uploadEnded.get(60, TimeUnit.SECONDS);
            assertEquals(size, received.get(), "bytes of the upload that reached the target");
            assertTrue(takenAtStall < size, "the whole upload left the browser before the target read: not tested");
        } finally {
            closeAll(browser, accepted, target);
        }
    }

    /** Counts what it reads and releases it; at the end of input, or the connection's, completes {@code ended}. */
    private static class CountingReader extends ChannelInboundHandlerAdapter {
        private final AtomicLong received;
        private final CompletableFuture<Void> ended;

        CountingReader(AtomicLong received, CompletableFuture<Void> ended) {
            this.received = received;
            this.ended = ended;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            received.addAndGet(buf.readableBytes());
            buf.release();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                ended.complete(null);
                ctx.close();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            ended.complete(null);
        }
    }

    /**
     * Queues {@code size} bytes on {@code ch} in 64 KiB writes, all at once, and half-closes it once the last is
     * written; {@code taken} counts what the socket took (a failed write took nothing).
     */
    private static void sendThenHalfClose(Channel ch, int size, AtomicLong taken) {
        for (int queued = 0; queued < size; queued += 64 * 1024) {
            ch.write(Unpooled.wrappedBuffer(new byte[64 * 1024])).addListener(f -> {
                if (f.isSuccess()) {
                    taken.addAndGet(64 * 1024);
                }
            });
        }
        ch.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(f -> ((DuplexChannel) ch).shutdownOutput());
    }

    /** Closes the browser's connection, the target's accepted one (if any) and its listener. */
    private static void closeAll(Channel browser, CompletableFuture<Channel> accepted, Channel listener)
            throws InterruptedException {
        if (browser != null) {
            browser.close().sync();
        }
        Channel acceptedChannel = accepted.getNow(null);
        if (acceptedChannel != null) {
            acceptedChannel.close().sync();
        }
        listener.close().sync();
    }

    /**
     * The browser stops reading at 64 MiB of a 1 GiB response. Backpressure must reach the target: the test waits
     * for the events that make up the stall (the gateway's stream has no flow-control window left and is not
     * writable, so the gateway stops reading the target; the target's socket write then blocks and its channel
     * turns unwritable), then checks that what the chain holds is bounded by the configured buffers.
     */
    @Test
    void slowReaderKeepsMemoryBoundedAndCompletesWhenReadingResumes() throws Exception {
        long total = 1024L * 1024 * 1024;
        long pauseAt = 64L * 1024 * 1024;
        int testSocketBuffer = 64 * 1024; // the target's SO_SNDBUF and the browser's SO_RCVBUF: the test's own sockets
        long directBefore = usedDirectMemory();
        try (RawSourceServer source = new RawSourceServer(total, testSocketBuffer)) {
            stack.grant("localhost", source.port());
            AtomicLong received = new AtomicLong();
            CRC32 crc = new CRC32();
            CompletableFuture<Void> done = new CompletableFuture<>();
            CompletableFuture<Void> paused = new CompletableFuture<>();
            ChannelInboundHandlerAdapter reader = new CountingReader(received, done) {
                boolean stopped;

                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    crc.update(((ByteBuf) msg).nioBuffer()); // a view: the count below sees the same bytes
                    super.channelRead(ctx, msg);
                }

                @Override
                public void channelReadComplete(ChannelHandlerContext ctx) {
                    if (received.get() >= pauseAt && !stopped) {
                        stopped = true; // stop asking for data: the browser stopped reading
                        paused.complete(null);
                        return;
                    }
                    ctx.read();
                }
            };
            Channel ch = ProxyClients.connectTunnel(clientGroup, stack.proxy(), stack.session().username(),
                    stack.session().password(), "localhost", source.port(), reader, false, testSocketBuffer);
            ch.read();
            paused.get(60, TimeUnit.SECONDS);
            until("the gateway's stream out of window and unwritable, and the target's write blocked",
                    Duration.ofSeconds(60), () -> gatewayStreamStalled() && source.blocked());
            long written = source.written();
            long inFlight = written - received.get();
            long directHeld = usedDirectMemory() - directBefore;

            // Bound on the bytes between the target's socket and the paused browser, hop by hop:
            //   target SO_SNDBUF + gateway's target-socket receive buffer (kernel autotuning, <= tcp_rmem max)
            //   + gateway stream write high-water mark + one read (reading stops once the stream is unwritable)
            //   + the stream's flow-control window (everything sent on the stream the ingress has not consumed:
            //     tunnel socket buffers and the ingress's stream queue)
            //   + ingress browser-socket write high-water mark + one read
            //   + ingress browser-socket send buffer (autotuned, <= tcp_wmem max) + the browser's SO_RCVBUF.
            var gatewayMux = stack.gateway().config().mux();
            var ingressMux = stack.ingressConfig().mux();
            long nettyHeld = gatewayMux.streamWriteHighWaterMark() + ReadBuffers.MAX_READ
                    + ingressMux.streamWindow()
                    + ingressMux.streamWriteHighWaterMark() + ReadBuffers.MAX_READ;
            long kernelHeld = source.connection().config().getOption(ChannelOption.SO_SNDBUF)
                    + kernelTcpMax("tcp_rmem") + kernelTcpMax("tcp_wmem")
                    + ch.config().getOption(ChannelOption.SO_RCVBUF);
            long inFlightBound = nettyHeld + kernelHeld;
            // Direct memory: only the Netty-held part is in buffers (kernel bytes are not), plus the target's own
            // queue (its 64 KiB high-water mark + one 64 KiB chunk), plus the allocator's reservation granularity.
            long directBound = nettyHeld + 2 * 64 * 1024 + ALLOCATOR_SLACK;
            System.out.printf("{\"test\":\"slow_reader\",\"total\":%d,\"receivedAtPause\":%d,"
                            + "\"targetWrittenAtStall\":%d,\"inFlightBytes\":%d,\"inFlightBound\":%d,"
                            + "\"nettyHeldBound\":%d,\"kernelHeldBound\":%d,\"allocatorDirectDelta\":%d,"
                            + "\"directBound\":%d}%n",
                    total, received.get(), written, inFlight, inFlightBound, nettyHeld, kernelHeld, directHeld,
                    directBound);
            assertTrue(inFlight <= inFlightBound, "bytes held between target and reader: " + inFlight + " > "
                    + inFlightBound);
            assertTrue(directHeld <= directBound, "direct memory taken during the stall: " + directHeld + " > "
                    + directBound);

            // Resume: everything arrives, byte-exact.
            ch.eventLoop().execute(ch::read);
            done.get(120, TimeUnit.SECONDS);
            assertEquals(total, received.get());
            assertEquals(SampleApp.patternCrc(total).getValue(), crc.getValue());
        }
    }

    /**
     * Direct memory the allocator may reserve beyond the live bytes: Netty 4.2's adaptive allocator takes memory in
     * chunks of up to 8 MiB (its MAX_CHUNK_SIZE) per magazine and fills them gradually, so the delta moves in chunk
     * steps, not buffer steps. Two such chunks are allowed. Measured in four runs: 7.3 to 8.2 MiB in all, at most
     * 2.0 MiB can be live (the Netty-held bound).
     */
    private static final long ALLOCATOR_SLACK = 2 * 8L * 1024 * 1024;

    private static long usedDirectMemory() {
        return ((ByteBufAllocatorMetricProvider) ByteBufAllocator.DEFAULT).metric().usedDirectMemory();
    }

    /** The kernel's autotuning ceiling for TCP buffers: the third value of /proc/sys/net/ipv4/tcp_rmem|tcp_wmem. */
    private static long kernelTcpMax(String name) throws Exception {
        String[] v = Files.readAllLines(Path.of("/proc/sys/net/ipv4/" + name)).get(0).trim().split("\\s+");
        return Long.parseLong(v[2]);
    }

    /**
     * True when the gateway's stream of this session (the only live one) has no remote flow-control window left
     * and is not writable: it will not read its target again until the ingress consumes.
     */
    private static boolean gatewayStreamStalled() {
        List<Channel> streams = stack.gateway().liveStreams().ofSession(stack.session().id());
        if (streams.size() != 1) {
            return false;
        }
        Http2StreamChannel stream = (Http2StreamChannel) streams.get(0);
        try {
            return stream.eventLoop().submit(() -> {
                Http2FrameCodec codec = stream.parent().pipeline().get(Http2FrameCodec.class);
                Http2Stream s = codec.connection().stream(stream.stream().id());
                return s != null && codec.connection().remote().flowController().windowSize(s) == 0
                        && !stream.isWritable();
            }).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("could not read the stream's window", e);
        }
    }
}
