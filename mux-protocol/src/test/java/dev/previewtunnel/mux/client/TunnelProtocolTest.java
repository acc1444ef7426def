package dev.previewtunnel.mux.client;

import dev.previewtunnel.mux.relay.OutputShutdown;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.server.MuxTestServer;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TunnelProtocolTest {
    static final Transports TRANSPORTS = Transports.best();
    static EventLoopGroup group;
    static MuxTestServer server;
    static final MuxSettings SETTINGS = MuxSettings.defaults();

    @BeforeAll
    static void start() throws Exception {
        group = TRANSPORTS.newGroup(2, "mux-test");
        server = new MuxTestServer(group, TRANSPORTS, SETTINGS, null);
    }

    @AfterAll
    static void stop() {
        server.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private TunnelConnection connect(String token) throws Exception {
        TunnelClient client = new TunnelClient(group, TRANSPORTS.socketChannel(), SETTINGS);
        Future<TunnelConnection> f = client.connect(URI.create("ws://127.0.0.1:" + server.port() + "/tunnel"),
                token, null, Duration.ofSeconds(5));
        return f.get(10, TimeUnit.SECONDS);
    }

    /** Collects everything a stream delivers until END_STREAM. */
    static final class Collector extends ChannelInboundHandlerAdapter {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final CompletableFuture<byte[]> done = new CompletableFuture<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            byte[] copy = new byte[buf.readableBytes()];
            buf.readBytes(copy);
            buf.release();
            synchronized (bytes) {
                bytes.write(copy, 0, copy.length);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.read();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                done.complete(bytes.toByteArray());
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            done.completeExceptionally(new IllegalStateException("closed before END_STREAM"));
        }
    }

    @Test
    void echoesBytesAndHalfCloseThroughAStream() throws Exception {
        TunnelConnection connection = connect("secret-token");
        try {
            Http2StreamChannel stream = connection.openStream(new Authority("localhost", 5173), "good",
                    Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
            Collector collector = new Collector();
            stream.pipeline().addLast(collector);
            stream.read();
            byte[] payload = new byte[3 * 1024 * 1024 + 17];
            new java.util.Random(42).nextBytes(payload);
            stream.write(Unpooled.wrappedBuffer(payload));
            // Half-close after sending: the echo must still come back in full.
            stream.writeAndFlush(OutputShutdown.INSTANCE);
            byte[] echoed = collector.done.get(20, TimeUnit.SECONDS);
            assertArrayEquals(payload, echoed);
        } finally {
            connection.close();
        }
    }

    @Test
    void refusedStreamCarriesTypedErrorAndDetail() throws Exception {
        TunnelConnection connection = connect("secret-token");
        try {
            ExecutionException e = assertThrows(ExecutionException.class, () -> connection.openStream(
                    new Authority("localhost", 5173), "forged", Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS));
            TunnelStreamException cause = assertInstanceOf(TunnelStreamException.class, e.getCause());
            assertEquals(TunnelError.GRANT_REFUSED, cause.error());
            assertEquals("grant_bad_signature", cause.detail());
            // The connection survives a refused stream.
            assertTrue(connection.isUsable());
        } finally {
            connection.close();
        }
    }

    @Test
    void wrongTokenIsRefusedAtUpgradeWithAClearMessage() {
        ExecutionException e = assertThrows(ExecutionException.class, () -> connect("wrong-token"));
        TunnelConnectException cause = assertInstanceOf(TunnelConnectException.class, e.getCause());
        assertTrue(cause.getMessage().contains("refused the connection token"), cause.getMessage());
        assertTrue(!cause.getMessage().contains("wrong-token"), "token must not be echoed");
    }

    @Test
    void manyStreamsShareOneConnection() throws Exception {
        TunnelConnection connection = connect("secret-token");
        try {
            int streams = 100;
            java.util.List<CompletableFuture<byte[]>> results = new java.util.ArrayList<>();
            java.util.List<byte[]> sent = new java.util.ArrayList<>();
            for (int i = 0; i < streams; i++) {
                Http2StreamChannel stream = connection.openStream(new Authority("127.0.0.1", 8000 + i), "good",
                        Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
                Collector c = new Collector();
                stream.pipeline().addLast(c);
                stream.read();
                byte[] payload = ("stream-" + i + "-").repeat(1000 + i).getBytes(StandardCharsets.US_ASCII);
                sent.add(payload);
                stream.write(Unpooled.wrappedBuffer(payload));
                stream.writeAndFlush(OutputShutdown.INSTANCE);
                results.add(c.done);
            }
            for (int i = 0; i < streams; i++) {
                assertArrayEquals(sent.get(i), results.get(i).get(20, TimeUnit.SECONDS), "stream " + i);
            }
        } finally {
            connection.close();
        }
    }
}
