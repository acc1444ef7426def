package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.sampleapp.RawEchoServer;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
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

    @Test
    void slowReaderKeepsMemoryBoundedAndCompletesWhenReadingResumes() throws Exception {
        long total = 1024L * 1024 * 1024;
        long pauseAt = 64L * 1024 * 1024;
        try (RawSourceServer source = new RawSourceServer(total)) {
            stack.grant("localhost", source.port());
            AtomicLong received = new AtomicLong();
            CRC32 crc = new CRC32();
            CompletableFuture<Void> done = new CompletableFuture<>();
            Object pauseLock = new Object();
            boolean[] paused = {false};
            ChannelInboundHandlerAdapter reader = new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    ByteBuf buf = (ByteBuf) msg;
                    byte[] b = new byte[buf.readableBytes()];
                    buf.readBytes(b);
                    buf.release();
                    crc.update(b);
                    received.addAndGet(b.length);
                }

                @Override
                public void channelReadComplete(ChannelHandlerContext ctx) {
                    synchronized (pauseLock) {
                        if (received.get() >= pauseAt && !paused[0]) {
                            paused[0] = true; // stop asking for data: the browser stopped reading
                            return;
                        }
                    }
                    ctx.read();
                }

                @Override
                public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                    if (evt instanceof ChannelInputShutdownEvent) {
                        done.complete(null);
                        ctx.close();
                    }
                }

                @Override
                public void channelInactive(ChannelHandlerContext ctx) {
                    done.complete(null);
                }
            };
            Channel ch = ProxyClients.connectTunnel(clientGroup, stack.proxy(), stack.session(), "localhost",
                    source.port(), reader, false);
            ch.read();
            until("reader paused after " + pauseAt + " bytes", Duration.ofSeconds(60), () -> {
                synchronized (pauseLock) {
                    return paused[0];
                }
            });
            // Wait until backpressure reached the target: it stops being able to write.
            long[] last = {-1};
            int[] stable = {0};
            until("target stalls", Duration.ofSeconds(30), () -> {
                long now = source.written();
                stable[0] = now == last[0] ? stable[0] + 1 : 0;
                last[0] = now;
                java.util.concurrent.locks.LockSupport.parkNanos(20_000_000);
                return stable[0] >= 10;
            });
            long inFlight = source.written() - received.get();
            long direct = ((ByteBufAllocatorMetricProvider) ByteBufAllocator.DEFAULT).metric().usedDirectMemory();
            System.out.printf("{\"test\":\"slow_reader\",\"total\":%d,\"receivedAtPause\":%d,\"targetWrittenAtPause\":%d,"
                    + "\"inFlightBytes\":%d,\"allocatorDirectBytes\":%d}%n", total, received.get(), source.written(),
                    inFlight, direct);
            assertTrue(source.written() < total / 4, "the target kept writing: " + source.written());
            assertTrue(inFlight < 48L * 1024 * 1024, "bytes held between target and reader: " + inFlight);
            assertTrue(direct < 96L * 1024 * 1024, "direct memory held by the allocator: " + direct);

            // Resume: everything arrives, byte-exact.
            ch.eventLoop().execute(ch::read);
            done.get(120, TimeUnit.SECONDS);
            assertEquals(total, received.get());
            assertEquals(SampleApp.patternCrc(total).getValue(), crc.getValue());
        }
    }
}
