package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.FakeEnvironment;
import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayLimits;
import dev.previewtunnel.gateway.cli.CliHarness.RunningServe;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.cli.InProcessCli.concat;
import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The abuse limits of {@code serve} as flags, PTUN_GATEWAY_* variables and config-file keys: the help states the
 * real defaults, docs/security.md lists every key, the values reach the running gateway in precedence order, the
 * gateway enforces them, and out-of-range values stop the start with the key and the reason.
 */
class ServeLimitsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;
    private String keys;
    @RegisterExtension
    final FakeEnvironment env = new FakeEnvironment();

    @BeforeEach
    void keysAndEnvironment() {
        keys = tmp.resolve("keys").toString();
        assertEquals(0, run("keys", "init", "--dir", keys).exitCode());
    }

    @Test
    void helpStatesTheDefaultsOfTheDefaultObjectsAndTheDocsListEveryKey() throws Exception {
        Map<String, String> defaults = LimitOptions.describe(
                GatewayConfig.defaults("e", new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)));
        assertTrue(ServeCommand.CONFIG_KEYS.containsAll(LimitOptions.KEYS), "each limit is a config-file key");
        InProcessCli.assertDefaultsDescribed(new CommandLine(new ServeCommand()).getCommandSpec(), LimitOptions.KEYS,
                defaults, Files.readString(Path.of("..", "docs", "security.md")));
        // The values the described defaults stand for are the ones the gateway runs with by default.
        assertEquals(512, GatewayLimits.defaults().streamsPerSession());
        assertEquals(1024, MuxSettings.defaults().maxConcurrentStreams());
    }

    @Test
    void flagsOverEnvironmentOverConfigFileReachTheRunningGateway() throws Exception {
        Path config = Files.writeString(tmp.resolve("gateway.json"), """
                {"keys": "keys", "env": "e", "listen": "127.0.0.1:0",
                 "max-streams-per-session": 7, "open-burst": 9, "handshake-timeout": "3s",
                 "max-frame-size": "32KiB", "stream-window": "1536KiB", "max-opens-per-second": "2.5"}
                """);
        env.put("PTUN_GATEWAY_OPEN_BURST", "11");
        env.put("PTUN_GATEWAY_MAX_RESETS", "50");
        env.put("PTUN_GATEWAY_RESET_WINDOW", "1m");
        RunningServe serve = RunningServe.start("serve", "--config", config.toString(), "--open-burst", "13",
                "--keepalive-interval", "5s", "--max-websocket-message", "1MiB", "--io-threads", "3");
        try {
            assertNotNull(serve.command.server(), serve.captured::err);
            GatewayConfig running = serve.command.server().config();
            GatewayLimits limits = running.limits();
            MuxSettings mux = running.mux();
            assertEquals(7, limits.streamsPerSession(), "from the file");
            assertEquals(13, limits.openBurst(), "flag over environment over file");
            assertEquals(2.5, limits.opensPerSecond(), 0.0);
            assertEquals(50, mux.maxRstPerWindow(), "from the environment");
            assertEquals(60, mux.rstWindowSeconds());
            assertEquals(Duration.ofSeconds(3), running.handshakeTimeout());
            assertEquals(32 * 1024, mux.maxFrameSize());
            assertEquals(1536 * 1024, mux.streamWindow());
            assertEquals(1536L * 1024 * 1024, mux.connectionWindow(), "stream window x 1024 streams, exactly");
            assertEquals(1024 * 1024, mux.maxWebSocketMessage());
            assertEquals(Duration.ofSeconds(5), mux.pingInterval());
            assertEquals(3, running.ioThreads(), "--io-threads");
            // Untouched ones keep their defaults.
            assertEquals(GatewayLimits.defaults().pendingDialsPerConnection(), limits.pendingDialsPerConnection());
            assertEquals(GatewayLimits.defaults().streamIdleTimeout(), limits.streamIdleTimeout());
            assertEquals(MuxSettings.defaults().maxConcurrentStreams(), mux.maxConcurrentStreams());
            assertEquals(MuxSettings.defaults().pingTimeout(), mux.pingTimeout());

            JsonNode line = InProcessCli.logLine(serve.captured.err(), "limits in effect");
            assertEquals("13", InProcessCli.keyValue(line, "open-burst"));
            assertEquals("1536KiB", InProcessCli.keyValue(line, "stream-window"));
            assertEquals("2.5", InProcessCli.keyValue(line, "max-opens-per-second"));
            assertEquals("3", InProcessCli.keyValue(line, "io-threads"));
        } finally {
            serve.close();
        }
        assertEquals(0, serve.awaitExit(), serve.captured::err);
    }

    /**
     * Two limits set on the command line, seen from a client: a silent connection is cut at the configured
     * handshake deadline (1 s, where the default 10 s would outlast the 5 s read timeout), and a second concurrent
     * stream of a session limited to one is refused while the first is open.
     */
    @Test
    void theRunningGatewayEnforcesConfiguredLimits() throws Exception {
        String token = run("token", "issue", "--keys", keys, "--env", "e").outLines().get(0);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (ServerSocket target = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            Authority authority = new Authority("127.0.0.1", target.getLocalPort());
            String grant = run("grant", "issue", "--keys", keys, "--env", "e", "--session", "s-1",
                    "--target", authority.toString()).outLines().get(0);
            RunningServe serve = RunningServe.start("serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0",
                    "--max-streams-per-session", "1", "--handshake-timeout", "1s", "--drain-timeout", "1s");
            try {
                assertNotNull(serve.command.server(), serve.captured::err);
                URI url = URI.create(JSON.readTree(serve.captured.out()).get("url").asText());

                try (Socket silent = new Socket()) {
                    silent.connect(new InetSocketAddress(url.getHost(), url.getPort()), 5000);
                    silent.setSoTimeout(5000);
                    try (InputStream in = silent.getInputStream()) {
                        assertEquals(-1, in.read(), "closed at the configured handshake deadline");
                    }
                }

                TunnelClient client = new TunnelClient(group, NioSocketChannel.class, MuxSettings.defaults());
                Future<TunnelConnection> connected = client.connect(url, token, null, Duration.ofSeconds(10));
                assertTrue(connected.await(15, TimeUnit.SECONDS));
                assertTrue(connected.isSuccess(), () -> "connect failed: " + connected.cause());
                TunnelConnection connection = connected.getNow();
                Future<Http2StreamChannel> first = connection.openStream(authority, grant, Duration.ofSeconds(10));
                assertTrue(first.await(15, TimeUnit.SECONDS));
                assertTrue(first.isSuccess(), () -> "first stream refused: " + first.cause());
                Future<Http2StreamChannel> second = connection.openStream(authority, grant, Duration.ofSeconds(10));
                assertTrue(second.await(15, TimeUnit.SECONDS));
                assertFalse(second.isSuccess(), "a second concurrent stream of the session");
                TunnelStreamException refused = assertInstanceOf(TunnelStreamException.class, second.cause());
                assertEquals(TunnelError.TOO_MANY_STREAMS, refused.error());
                assertEquals("session_stream_limit", refused.detail());
                first.getNow().close().syncUninterruptibly();
            } finally {
                serve.close();
            }
            assertEquals(0, serve.awaitExit(), serve.captured::err);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    void outOfRangeOrMalformedLimitsStopTheStartWithTheKeyAndTheReason() throws Exception {
        String[] base = {"serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0"};
        assertRefused(concat(base, "--max-streams-per-session", "0"),
                "--max-streams-per-session must be at least 1, got 0");
        assertRefused(concat(base, "--handshake-timeout", "1h"), "--handshake-timeout must be at most 10m, got 1h");
        assertRefused(concat(base, "--max-tunnel-connections", "10", "--max-handshaking-connections", "11"),
                "--max-handshaking-connections must be at most 10, got 11");
        assertRefused(concat(base, "--max-local-connections", "0"), "--max-local-connections must be at least 1");
        assertRefused(concat(base, "--reset-window", "PT1.5S"), "--reset-window must be whole seconds");
        assertRefused(concat(base, "--max-opens-per-second", "0.01"), "--max-opens-per-second must be 0.1 to");
        assertRefused(concat(base, "--stream-window", "64K"), "invalid size '64K'; use bytes or KiB/MiB/GiB");
        assertRefused(concat(base, "--stream-window", "2GiB"), "--stream-window must be at most 1GiB, got 2GiB");
        // Each is in range, but the connection window (their product) would not fit HTTP/2's 2^31-1: refused,
        // never capped.
        assertRefused(concat(base, "--stream-window", "2MiB"), "--stream-window: 2MiB x 1024 streams "
                + "(--max-streams-per-connection) is the connection window, which HTTP/2 caps at 2^31-1 bytes: lower "
                + "it to at most 2047KiB, or --max-streams-per-connection to at most 1023");
        assertRefused(concat(base, "--stream-window", "64MiB", "--max-streams-per-connection", "64"),
                "--stream-window: 64MiB x 64 streams (--max-streams-per-connection) is the connection window");

        env.put("PTUN_GATEWAY_MAX_FRAME_SIZE", "32MiB");
        assertRefused(base, "max-frame-size (from PTUN_GATEWAY_MAX_FRAME_SIZE) must be at most 16777215, got 32MiB");
        env.clear();

        Path file = Files.writeString(tmp.resolve("small.json"), "{\"max-websocket-message\": \"8KiB\"}");
        assertRefused(concat(base, "--config", file.toString()),
                "max-websocket-message (from config file " + file + ") must be at least 16KiB, got 8KiB");
        Path typo = Files.writeString(tmp.resolve("typo.json"), "{\"max-stream-per-session\": 5}");
        assertRefused(concat(base, "--config", typo.toString()), "unknown key \"max-stream-per-session\"");
    }

    private static void assertRefused(String[] args, String expected) {
        Result r = run(args);
        assertEquals(1, r.exitCode(), () -> String.join(" ", args) + "\n" + r);
        assertTrue(r.cliErrorLine().contains(expected), () -> "expected '" + expected + "' in\n" + r);
    }
}
