package dev.previewtunnel.mux.codec;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.server.MuxTestServer;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link MuxPipeline#closeGracefully}: the drain a stop waits for ends when the connection does, not at the end of
 * the grace period. A connection with a stream still open gets GOAWAY and waits for its streams; when the peer
 * closes the connection meanwhile, HTTP/2's graceful close only completes its promise when its own timeout fires,
 * so a gateway's stop used to wait its whole drain timeout for a connection that was already gone.
 */
class CloseGracefullyTest {
    private static final Transports TRANSPORTS = Transports.best();
    private static final Duration GRACE = Duration.ofSeconds(20);

    @Test
    void theDrainEndsWhenThePeerClosesTheConnection() throws Exception {
        EventLoopGroup serverLoop = TRANSPORTS.newGroup(1, "cg-server");
        EventLoopGroup clientLoop = TRANSPORTS.newGroup(1, "cg-client");
        CompletableFuture<Channel> serverConnection = new CompletableFuture<>();
        TunnelConnection connection = null;
        try (MuxTestServer server = new MuxTestServer(serverLoop, TRANSPORTS, MuxSettings.defaults(),
                new AcceptAndHold(serverConnection))) {
            connection = new TunnelClient(clientLoop, TRANSPORTS.socketChannel(), MuxSettings.defaults())
                    .connect(URI.create("ws://127.0.0.1:" + server.port() + "/tunnel"), "secret-token", null,
                            Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            Http2StreamChannel stream = connection.openStream(new Authority("localhost", 5173), "good",
                    Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
            Channel peer = serverConnection.get(10, TimeUnit.SECONDS);

            // GOAWAY, and the stream keeps the connection open: the drain is under way.
            ChannelFuture drained = MuxPipeline.closeGracefully(connection.channel(), GRACE);
            assertFalse(drained.await(300, TimeUnit.MILLISECONDS), "the drain waits for the open stream");
            assertTrue(stream.isActive(), "the stream is still open during the drain");

            // The peer goes away at once (its socket closed from the head of its pipeline, past its own HTTP/2
            // graceful close), as a process that exits does.
            peer.eventLoop().submit(() -> peer.pipeline().firstContext().close()).sync();
            assertTrue(connection.channel().closeFuture().await(10, TimeUnit.SECONDS), "the connection closed");
            assertTrue(drained.await(5, TimeUnit.SECONDS),
                    "the drain ended with the connection, not at the end of its " + GRACE.toSeconds() + " s");
        } finally {
            if (connection != null) {
                connection.channel().close().sync();
            }
            clientLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            serverLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** Accepts each stream and keeps it open without reading; records the connection it came on. */
    @ChannelHandler.Sharable
    private static final class AcceptAndHold extends ChannelInboundHandlerAdapter {
        private final CompletableFuture<Channel> connection;

        AcceptAndHold(CompletableFuture<Channel> connection) {
            this.connection = connection;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Http2HeadersFrame) {
                ctx.writeAndFlush(ConnectHeaders.accepted());
                connection.complete(ctx.channel().parent());
            }
            ReferenceCountUtil.release(msg);
        }
    }
}
