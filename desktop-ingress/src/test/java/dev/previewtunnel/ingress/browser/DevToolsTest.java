package dev.previewtunnel.ingress.browser;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.json.JsonTrees;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The DevTools client's plumbing against a fake browser endpoint over a real WebSocket: answers matched by id,
 * events with their session in order, errors without the command's parameters, and a closed peer failing what
 * waits.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class DevToolsTest {
    private static final String PATH = "/devtools/browser/test";

    private EventLoopGroup group;
    private Channel server;
    private final List<Channel> peers = new CopyOnWriteArrayList<>();
    private DevTools devTools;

    @BeforeEach
    void start() throws InterruptedException {
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        peers.add(ch);
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(65536),
                                new WebSocketServerProtocolHandler(PATH), new FakeBrowser());
                    }
                })
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)).sync().channel();
        int port = ((InetSocketAddress) server.localAddress()).getPort();
        devTools = DevTools.connect(URI.create("ws://127.0.0.1:" + port + PATH));
    }

    @AfterEach
    void stop() {
        devTools.close();
        server.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /**
     * {@code Echo.ok}: two events ({@code n} 1 and 2, the second in session S1), then {@code {echo: params}};
     * {@code Echo.fail}: a DevTools error; {@code Echo.hang}: no answer; {@code Peer.close}: closes the socket.
     */
    private static final class FakeBrowser extends SimpleChannelInboundHandler<TextWebSocketFrame> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, TextWebSocketFrame frame) throws Exception {
            JsonNode msg = JsonTrees.parse(frame.text());
            long id = msg.get("id").asLong();
            switch (msg.get("method").asText()) {
                case "Echo.ok" -> {
                    ctx.write(new TextWebSocketFrame("{\"method\":\"Test.event\",\"params\":{\"n\":1}}"));
                    ctx.write(new TextWebSocketFrame(
                            "{\"method\":\"Test.event\",\"params\":{\"n\":2},\"sessionId\":\"S1\"}"));
                    ObjectNode answer = DevTools.params().put("id", id);
                    answer.putObject("result").set("echo", msg.get("params"));
                    ctx.writeAndFlush(new TextWebSocketFrame(answer.toString()));
                }
                case "Echo.fail" -> ctx.writeAndFlush(new TextWebSocketFrame(
                        "{\"id\":" + id + ",\"error\":{\"code\":-32000,\"message\":\"no such target\"}}"));
                case "Peer.close" -> ctx.writeAndFlush(new CloseWebSocketFrame()).addListener(f -> ctx.close());
                default -> {
                    // Echo.hang: never answered
                }
            }
        }
    }

    @Test
    void answersAreMatchedByIdAndEventsArriveInOrderWithTheirSession() throws Exception {
        List<String> events = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> both = new CompletableFuture<>();
        devTools.on("Test.event", (params, session) -> {
            events.add(params.get("n").asInt() + "@" + session);
            if (events.size() == 2) {
                both.complete(null);
            }
        });
        JsonNode result = devTools.send("Echo.ok", DevTools.params().put("x", 7));
        assertEquals(7, result.path("echo").path("x").asInt());
        both.get(10, TimeUnit.SECONDS);
        assertEquals(List.of("1@null", "2@S1"), events);
    }

    @Test
    void aHandlerMaySendCommandsOfItsOwn() throws Exception {
        CompletableFuture<JsonNode> fromHandler = new CompletableFuture<>();
        devTools.on("Test.event", (params, session) -> {
            if ("S1".equals(session)) {
                fromHandler.complete(devTools.send("Echo.ok", DevTools.params().put("from", "handler"), session));
            }
        });
        devTools.send("Echo.ok", null);
        assertEquals("handler", fromHandler.get(10, TimeUnit.SECONDS).path("echo").path("from").asText());
    }

    @Test
    void anErrorNamesTheBrowsersMessageNotTheParameters() {
        DevTools.DevToolsException e = assertThrows(DevTools.DevToolsException.class,
                () -> devTools.send("Echo.fail", DevTools.params().put("password", "hunter2-secret")));
        assertTrue(e.getMessage().contains("no such target"), e.getMessage());
        assertFalse(e.getMessage().contains("hunter2-secret"), "parameters stay out of exceptions");
    }

    @Test
    void aClosedPeerFailsWhatWaitsAndWhatComesAfter() throws Exception {
        CompletableFuture<JsonNode> hanging = devTools.sendAsync("Echo.hang", null, null);
        devTools.sendAsync("Peer.close", null, null);
        ExecutionException e = assertThrows(ExecutionException.class, () -> hanging.get(10, TimeUnit.SECONDS));
        assertInstanceOf(DevTools.DevToolsException.class, e.getCause());
        assertTrue(devTools.isClosed());
        CompletableFuture<JsonNode> after = devTools.sendAsync("Echo.ok", null, null);
        assertTrue(after.isCompletedExceptionally(), "a command after the close fails at once");
    }
}
