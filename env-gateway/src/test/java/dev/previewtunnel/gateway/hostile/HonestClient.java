package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.OutputShutdown;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The hostile suite's well-behaved ingress: checks that a gateway under attack still serves everyone else. */
final class HonestClient {
    private HonestClient() {
    }

    /**
     * Connects to {@code gateway} on a connection of its own, opens a granted stream to the {@code RawEchoServer} at
     * {@code echoPort}, sends 1,000 bytes and its end, and asserts the echo's count comes back.
     */
    static void exchange(EventLoopGroup group, GatewayProcess gateway, String token, GrantIssuer issuer, String env,
                         int echoPort) throws Exception {
        URI url = URI.create(gateway.ready.path("url").asText());
        TunnelConnection connection = new TunnelClient(group, Transports.best().socketChannel(),
                MuxSettings.defaults()).connect(url, token, null, Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
        try {
            String grant = issuer.issueGrant(GrantSpec.tcp(env, "s1", "127.0.0.1", echoPort), Duration.ofMinutes(5));
            Http2StreamChannel stream = connection.openStream(new Authority("127.0.0.1", echoPort), grant,
                    Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
            CompletableFuture<String> answer = new CompletableFuture<>();
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            stream.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    if (msg instanceof ByteBuf buf) {
                        byte[] copy = new byte[buf.readableBytes()];
                        buf.readBytes(copy);
                        bytes.writeBytes(copy);
                    }
                    ReferenceCountUtil.release(msg);
                    ctx.read();
                }

                @Override
                public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                    ReferenceCountUtil.release(evt);
                    ctx.read();
                }

                @Override
                public void channelInactive(ChannelHandlerContext ctx) {
                    answer.complete(bytes.toString(StandardCharsets.US_ASCII));
                }
            });
            stream.read();
            stream.write(Unpooled.wrappedBuffer(new byte[1000]));
            stream.writeAndFlush(OutputShutdown.INSTANCE);
            assertEquals("1000\n", answer.get(10, TimeUnit.SECONDS));
        } finally {
            connection.channel().close().syncUninterruptibly();
        }
    }
}
