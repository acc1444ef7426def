package dev.previewtunnel.mux.relay;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelOutputShutdownEvent;
import io.netty.channel.socket.ChannelOutputShutdownException;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.unix.UnixChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.NotYetConnectedException;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link OutputShutdown} on a real socket, on both transports: every byte written before it arrives, then the FIN;
 * the channel stays open for reading (a half-close, not a close); the output-shutdown event fires and the promise
 * succeeds. On the native transport the FIN is sent without Netty's {@code shutdownOutput()} (which builds an
 * exception with a stack trace each time); that path leaves the outbound buffer in place, Netty's discards it,
 * which is how the test tells them apart.
 */
class SocketHalfCloseHandlerTest {
    // Several socket buffers' worth: the half-close waits until the peer has read most of it.
    private static final int PAYLOAD = 8 << 20;
    private EventLoopGroup group;
    private Channel server;

    @AfterEach
    void stop() throws Exception {
        if (server != null) {
            server.close().sync();
        }
        if (group != null) {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    /** A server on loopback whose accepted sockets half-close through the handler under test, then {@code last}. */
    private void startServer(Transports t, ChannelHandler last) throws InterruptedException {
        server = new ServerBootstrap().group(group).channel(t.serverSocketChannel())
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(SocketHalfCloseHandler.INSTANCE, last);
                    }
                })
                .bind(InetAddress.getLoopbackAddress(), 0).sync().channel();
    }

    /**
     * {@code lateWrite}: bytes written (not flushed) after {@link OutputShutdown} make the native transport take
     * Netty's path too, which fails them at once; they never reach the peer.
     */
    @ParameterizedTest(name = "{0}, write after the half-close: {1}")
    @CsvSource({"epoll, false", "nio, false", "epoll, true"})
    void halfClosesAfterEveryQueuedByteAndKeepsReading(String transport, boolean lateWrite) throws Exception {
        Transports t = TestTransports.named(transport);
        group = new MultiThreadIoEventLoopGroup(1, t.ioHandlerFactory());

        byte[] payload = new byte[PAYLOAD];
        new Random(42).nextBytes(payload);
        CompletableFuture<DuplexChannel> accepted = new CompletableFuture<>();
        CompletableFuture<Void> shutdownDone = new CompletableFuture<>();
        AtomicBoolean outputShutdownEvent = new AtomicBoolean();
        CompletableFuture<String> readAfterHalfClose = new CompletableFuture<>();
        ByteArrayOutputStream afterFin = new ByteArrayOutputStream();
        AtomicReference<ChannelFuture> late = new AtomicReference<>();

        startServer(t, new ChannelInboundHandlerAdapter() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                accepted.complete((DuplexChannel) ctx.channel());
                // Several writes, no flush between them: all queued when the shutdown is asked for.
                for (int off = 0; off < PAYLOAD; off += 65_536) {
                    ctx.write(Unpooled.wrappedBuffer(payload, off, 65_536));
                }
                ChannelFuture f = ctx.writeAndFlush(OutputShutdown.INSTANCE);
                f.addListener(done -> {
                    if (done.isSuccess()) {
                        shutdownDone.complete(null);
                    } else {
                        shutdownDone.completeExceptionally(done.cause());
                    }
                });
                if (lateWrite) {
                    late.set(ctx.write(Unpooled.wrappedBuffer("late".getBytes(StandardCharsets.US_ASCII))));
                }
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ByteBuf buf = (ByteBuf) msg;
                afterFin.writeBytes(ByteBufUtil.getBytes(buf));
                buf.release();
            }

            @Override
            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                if (evt == ChannelOutputShutdownEvent.INSTANCE) {
                    outputShutdownEvent.set(true);
                } else if (evt == ChannelInputShutdownEvent.INSTANCE) {
                    readAfterHalfClose.complete(afterFin.toString(StandardCharsets.US_ASCII));
                    ctx.close();
                }
            }
        });

        try (Socket client = new Socket()) {
            client.setSoTimeout(30_000);
            client.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                    ((InetSocketAddress) server.localAddress()).getPort()));
            InputStream in = client.getInputStream();
            byte[] received = in.readAllBytes(); // returns at the FIN
            assertArrayEquals(payload, received, "every byte written before OutputShutdown, then EOF");
            shutdownDone.get(30, TimeUnit.SECONDS);

            DuplexChannel ch = accepted.get(30, TimeUnit.SECONDS);
            CompletableFuture<Object[]> state = new CompletableFuture<>();
            ch.eventLoop().execute(() -> state.complete(new Object[]{
                    ch.isOutputShutdown(), ch.isInputShutdown(), ch.isActive(), ch.unsafe().outboundBuffer()}));
            Object[] s = state.get(30, TimeUnit.SECONDS);
            assertTrue((Boolean) s[0], "output shut down");
            assertFalse((Boolean) s[1], "input still open");
            assertTrue((Boolean) s[2], "channel still active");
            assertTrue(outputShutdownEvent.get(), "ChannelOutputShutdownEvent fired");
            if ("epoll".equals(transport) && !lateWrite) {
                assertNotNull(s[3], "native transport: FIN sent directly, Netty's shutdownOutput() not used");
            } else {
                assertNull(s[3], "Netty's shutdownOutput() (discards the outbound buffer)");
            }
            if (lateWrite) {
                assertTrue(late.get().isDone() && late.get().cause() instanceof ChannelOutputShutdownException,
                        "the write after the half-close failed with it: " + late.get());
            }

            // The half-closed channel still reads what the peer sends, until the peer's own FIN.
            OutputStream out = client.getOutputStream();
            out.write("still reading".getBytes(StandardCharsets.US_ASCII));
            client.shutdownOutput();
            assertEquals("still reading", readAfterHalfClose.get(30, TimeUnit.SECONDS));
        }
    }

    /**
     * The peer resets the connection after the last write and before the half-close: the direct path's
     * {@code shutdown(2)} fails (ENOTCONN, which Netty throws as {@code NotYetConnectedException}); the promise
     * fails as on Netty's path and the event still fires. The event loop is held in one task from before the reset
     * until the half-close, so Netty cannot close the channel first and hide the case.
     */
    @Test
    void aResetBeforeTheHalfCloseFailsItsPromise() throws Exception {
        Transports t = TestTransports.named("epoll");
        group = new MultiThreadIoEventLoopGroup(1, t.ioHandlerFactory());
        CompletableFuture<DuplexChannel> accepted = new CompletableFuture<>();
        AtomicBoolean outputShutdownEvent = new AtomicBoolean();
        startServer(t, new ChannelInboundHandlerAdapter() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                accepted.complete((DuplexChannel) ctx.channel());
            }

            @Override
            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                if (evt == ChannelOutputShutdownEvent.INSTANCE) {
                    outputShutdownEvent.set(true);
                }
            }
        });

        try (Socket client = new Socket()) {
            client.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                    ((InetSocketAddress) server.localAddress()).getPort()));
            DuplexChannel ch = accepted.get(30, TimeUnit.SECONDS);
            io.netty.channel.unix.Socket socket = (io.netty.channel.unix.Socket) ((UnixChannel) ch).fd();
            CountDownLatch holding = new CountDownLatch(1);
            CompletableFuture<ChannelFuture> halfClose = new CompletableFuture<>();
            ch.eventLoop().execute(() -> {
                holding.countDown();
                try {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    while (socket.getSoError() == 0 && System.nanoTime() < deadline) {
                        Thread.onSpinWait(); // the reset is on its way over loopback
                    }
                    ChannelPromise promise = ch.newPromise();
                    SocketHalfCloseHandler.shutdownOutput(ch, promise);
                    halfClose.complete(promise);
                } catch (Throwable e) {
                    halfClose.completeExceptionally(e);
                }
            });
            assertTrue(holding.await(30, TimeUnit.SECONDS));
            client.setSoLinger(true, 0);
            client.close(); // RST

            ChannelFuture f = halfClose.get(30, TimeUnit.SECONDS);
            assertTrue(f.isDone() && !f.isSuccess(), "the half-close of a reset socket failed: " + f);
            assertTrue(f.cause() instanceof NotYetConnectedException || f.cause() instanceof IOException,
                    String.valueOf(f.cause()));
            assertTrue(outputShutdownEvent.get(), "ChannelOutputShutdownEvent fired, as on Netty's path");
        }
    }
}
