package dev.previewtunnel.mux.relay;

import dev.previewtunnel.testing.Await;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.channels.NotYetConnectedException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * A relay between two real sockets ends cleanly whichever side ends first: each side's bytes arrive, then its end
 * of input, and the relay reports {@link RelayHandler.End#BOTH_ENDED}. The side whose end of input comes second
 * arrives on a socket whose FIN already went out; the relay lets Netty close it there rather than half-close it,
 * and no {@link NotYetConnectedException} is built on the way (Netty's epoll transport built one per such ending:
 * docs/performance.md, finding 48), which a JFR recording of exception constructions checks.
 */
class RelaySocketEndingTest {
    private EventLoopGroup group;
    private Channel server;
    private ServerSocket target;
    /** The relay's channel to the target, once linked. */
    private final CompletableFuture<Channel> linked = new CompletableFuture<>();
    /** The relay's channel to the client (accepted), once linked. */
    private final CompletableFuture<Channel> linkedClient = new CompletableFuture<>();

    @AfterEach
    void stop() throws Exception {
        if (server != null) {
            server.close().sync();
        }
        if (target != null) {
            target.close();
        }
        if (group != null) {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        }
    }

    @ParameterizedTest(name = "{0}, the {1} ends first")
    @CsvSource({"epoll, client", "epoll, target", "nio, client", "nio, target"})
    void endsCleanlyWithoutAnExceptionWhicheverSideEndsFirst(String transport, String first, @TempDir Path dir)
            throws Exception {
        CompletableFuture<RelayHandler.End> end = new CompletableFuture<>();
        startRelay(TestTransports.named(transport), end);

        try (Recording recording = new Recording()) {
            recording.enable("jdk.JavaExceptionThrow");
            recording.start();
            try (Socket client = new Socket(InetAddress.getLoopbackAddress(),
                    ((InetSocketAddress) server.localAddress()).getPort());
                 Socket accepted = target.accept()) {
                // Bytes and a FIN that reached a socket before its relay was linked would have no pipeline
                // handler to take them (the kernel reports the FIN even with reads off).
                linked.get(10, TimeUnit.SECONDS);
                client.setSoTimeout(10_000);
                accepted.setSoTimeout(10_000);
                Socket firstSide = "client".equals(first) ? client : accepted;
                Socket secondSide = firstSide == client ? accepted : client;

                firstSide.getOutputStream().write("first".getBytes(StandardCharsets.US_ASCII));
                firstSide.shutdownOutput();
                assertEquals("first", readToEnd(secondSide.getInputStream()));
                // The second side's FIN now reaches a relay socket whose own FIN went out already.
                secondSide.getOutputStream().write("second".getBytes(StandardCharsets.US_ASCII));
                secondSide.shutdownOutput();
                assertEquals("second", readToEnd(firstSide.getInputStream()));
                assertEquals(RelayHandler.End.BOTH_ENDED, end.get(10, TimeUnit.SECONDS));
            }
            recording.stop();
            Path file = dir.resolve("exceptions.jfr");
            recording.dump(file);
            long built = RecordingFile.readAllEvents(file).stream()
                    .filter(e -> "jdk.JavaExceptionThrow".equals(e.getEventType().getName()))
                    .map(RelaySocketEndingTest::thrownClass)
                    .filter(NotYetConnectedException.class.getName()::equals)
                    .count();
            assertEquals(0, built, "NotYetConnectedExceptions built while the relay ended");
        }
    }

    /**
     * Client socket -> relay (accepted channel a, dialed channel b on a's loop) -> {@link #target}; {@code end}
     * completes with how the relay ended, {@link #linked} once it is linked.
     */
    private void startRelay(Transports t, CompletableFuture<RelayHandler.End> end) throws Exception {
        group = new MultiThreadIoEventLoopGroup(1, t.ioHandlerFactory());
        target = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());

        server = new ServerBootstrap().group(group).channel(t.serverSocketChannel())
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel a) {
                        ReadBuffers.relayReads(a);
                        a.pipeline().addLast(SocketHalfCloseHandler.INSTANCE);
                        new Bootstrap().group(a.eventLoop()).channel(t.socketChannel())
                                .option(ChannelOption.ALLOW_HALF_CLOSURE, true)
                                .option(ChannelOption.AUTO_READ, false)
                                .option(ChannelOption.RCVBUF_ALLOCATOR, ReadBuffers.relayAllocator())
                                .handler(SocketHalfCloseHandler.INSTANCE)
                                .connect(target.getLocalSocketAddress())
                                .addListener(f -> {
                                    Channel b = ((ChannelFuture) f).channel();
                                    if (f.isSuccess()) {
                                        RelayHandler.link(a, b, (fromA, fromB, how) -> end.complete(how));
                                        linkedClient.complete(a);
                                        linked.complete(b);
                                    } else {
                                        a.close();
                                    }
                                });
                    }
                })
                .bind(InetAddress.getLoopbackAddress(), 0).sync().channel();
    }

    /**
     * After the client's FIN reached the target through the relay, the target's socket is reset ({@code reset}) or
     * the relay's socket to it is closed by something else than its end of input ({@code close}: here the test, in
     * the gateway a drain or a stop): the relay aborts; only an end-of-file read ends it cleanly.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @CsvSource({"epoll, reset", "nio, reset", "epoll, close", "nio, close"})
    void anyOtherEndAfterTheRelaysFinAborts(String transport, String how) throws Exception {
        CompletableFuture<RelayHandler.End> end = new CompletableFuture<>();
        startRelay(TestTransports.named(transport), end);
        try (Socket client = new Socket(InetAddress.getLoopbackAddress(),
                ((InetSocketAddress) server.localAddress()).getPort());
             Socket accepted = target.accept()) {
            Channel b = linked.get(10, TimeUnit.SECONDS);
            accepted.setSoTimeout(10_000);
            client.getOutputStream().write("first".getBytes(StandardCharsets.US_ASCII));
            client.shutdownOutput();
            assertEquals("first", readToEnd(accepted.getInputStream()));
            if ("reset".equals(how)) {
                accepted.setSoLinger(true, 0); // close with RST
                accepted.close();
                assertNotEquals(RelayHandler.End.BOTH_ENDED, end.get(10, TimeUnit.SECONDS));
            } else {
                b.close().sync();
                assertEquals(RelayHandler.End.B_CLOSED_FIRST, end.get(10, TimeUnit.SECONDS));
            }
        }
    }

    /**
     * One side sends its request and half-closes; the other answers with more than the buffers on the way hold, read
     * only once they are full: the answer must arrive whole. Netty 4.2.18's epoll handler takes a socket asking for
     * no event out of its epoll set, and the relay's socket to the asking side then failed its wait for room to
     * write (epoll_ctl MOD: ENOENT) and was shut: the answer was cut short, on epoll only
     * ({@link EpollStayRegistered}).
     */
    @ParameterizedTest(name = "{0}, the {1} ends first")
    @CsvSource({"epoll, client", "epoll, target", "nio, client", "nio, target"})
    void aLargeAnswerAfterOneSideEndedArrivesWhole(String transport, String first) throws Exception {
        CompletableFuture<RelayHandler.End> end = new CompletableFuture<>();
        startRelay(TestTransports.named(transport), end);
        int size = 32 << 20;
        try (Socket client = new Socket(InetAddress.getLoopbackAddress(),
                ((InetSocketAddress) server.localAddress()).getPort());
             Socket accepted = target.accept()) {
            Channel toTarget = linked.get(10, TimeUnit.SECONDS);
            Channel toClient = linkedClient.get(10, TimeUnit.SECONDS);
            client.setSoTimeout(10_000);
            accepted.setSoTimeout(10_000);
            Socket asking = "client".equals(first) ? client : accepted;
            Socket answering = asking == client ? accepted : client;
            Channel toAsking = asking == client ? toClient : toTarget;
            asking.getOutputStream().write("request".getBytes(StandardCharsets.US_ASCII));
            asking.shutdownOutput();
            // The relay has seen that side's end of input once its FIN came out on the other side: only then does
            // the answer start, so the relay's socket to the asking side has nothing to read or write for a while.
            assertEquals("request", readToEnd(answering.getInputStream()));
            AtomicLong sent = new AtomicLong();
            CompletableFuture<Void> written = CompletableFuture.runAsync(() -> {
                try {
                    byte[] chunk = new byte[64 * 1024];
                    while (sent.get() < size) {
                        answering.getOutputStream().write(chunk);
                        sent.addAndGet(chunk.length);
                    }
                    answering.shutdownOutput();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            // Read only once every buffer on the way is full: the relay has then had to wait for room to write to
            // the asking side, the request Netty's epoll handler refused. (A failed writer ends the wait: the count
            // below tells.)
            Await.stalled("the answering side's writer", Duration.ofSeconds(10), sent::get, written);
            assertFalse(toAsking.isWritable(), "the relay never had to wait for room to write: the case is not tested");
            long received = 0;
            byte[] buffer = new byte[64 * 1024];
            InputStream in = asking.getInputStream();
            try {
                for (int n; (n = in.read(buffer)) >= 0; ) {
                    received += n;
                }
            } catch (IOException e) {
                // a reset: the count below says how much arrived
            }
            assertEquals(size, received, "bytes of the answer that arrived");
            written.get(10, TimeUnit.SECONDS);
            assertEquals(RelayHandler.End.BOTH_ENDED, end.get(10, TimeUnit.SECONDS));
        }
    }

    private static String thrownClass(RecordedEvent event) {
        RecordedClass thrown = event.getValue("thrownClass");
        return thrown == null ? "" : thrown.getName();
    }

    /** Reads until the peer's FIN; a reset or a timeout fails the test with its exception. */
    private static String readToEnd(InputStream in) throws Exception {
        return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
    }
}
