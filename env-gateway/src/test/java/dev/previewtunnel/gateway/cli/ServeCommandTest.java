package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.gateway.cli.CliHarness.RunningServe;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ServeCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;
    String keys;

    @BeforeEach
    void initKeys() {
        keys = tmp.resolve("keys").toString();
        assertEquals(0, run("keys", "init", "--dir", keys).exitCode());
    }

    @Test
    void serveBindsPrintsTheReadyLineAndStopsCleanly() throws Exception {
        JsonNode ready;
        GatewayServer server;
        RunningServe serve = RunningServe.start("serve", "--keys", keys, "--env", "env-1", "--listen", "127.0.0.1:0");
        try {
            server = serve.command.server();
            assertNotNull(server, serve.captured::err);
            String out = serve.captured.out();
            assertEquals(1, out.lines().count(), out);
            assertTrue(out.endsWith("\n"), "the ready line is complete when ready is signalled");
            ready = JSON.readTree(out.lines().findFirst().orElseThrow());

            int port = server.address().getPort();
            assertTrue(port > 0);
            assertEquals("ready", ready.get("event").asText());
            assertEquals("127.0.0.1:" + port, ready.get("listen").asText());
            assertEquals("ws://127.0.0.1:" + port + "/tunnel", ready.get("url").asText());
            assertEquals("env-1", ready.get("env").asText());
            assertEquals(MuxProtocol.SUBPROTOCOL, ready.get("protocol").asText());
            assertTrue(Set.of("epoll", "nio").contains(ready.get("transport").asText()), ready::toString);
            assertEquals(GatewayVersionProvider.projectVersion(), ready.get("version").asText());
            assertEquals(7, ready.size(), ready::toString);

            try (Socket s = new Socket()) { // really listening
                s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 5000);
            }
        } finally {
            serve.close();
        }
        Result r = serve.result();
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.outLines().size(), "nothing else on stdout: " + r);
        assertTrue(r.err().contains("\"stopped\""), r::toString);
    }

    /**
     * The whole chain through the CLI: keys, token and grant issued by the commands, accepted by the served gateway
     * for a real stream to a loopback target; stopping drains the connection.
     */
    @Test
    void issuedTokenAndGrantOpenAStreamThroughTheServedGateway() throws Exception {
        String token = run("token", "issue", "--keys", keys, "--env", "env-1", "--ttl", "5m").outLines().get(0);
        String wrongEnvToken = run("token", "issue", "--keys", keys, "--env", "env-2").outLines().get(0);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (ServerSocket target = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            target.setSoTimeout(10_000);
            Authority authority = new Authority("127.0.0.1", target.getLocalPort());
            String grant = run("grant", "issue", "--keys", keys, "--env", "env-1", "--session", "s-1",
                    "--target", authority.toString()).outLines().get(0);

            RunningServe serve = RunningServe.start("serve", "--keys", keys, "--env", "env-1",
                    "--listen", "127.0.0.1:0", "--drain-timeout", "2s");
            TunnelConnection connection;
            try {
                GatewayServer server = serve.command.server();
                assertNotNull(server, serve.captured::err);
                URI url = URI.create(JSON.readTree(serve.captured.out()).get("url").asText());
                TunnelClient client = new TunnelClient(group, NioSocketChannel.class, MuxSettings.defaults());

                Future<TunnelConnection> refused = client.connect(url, wrongEnvToken, null, Duration.ofSeconds(10));
                assertTrue(refused.await(15, TimeUnit.SECONDS));
                assertFalse(refused.isSuccess(), "a token for another environment is refused");

                connection = CliHarness.connect(client, url, token);
                CliHarness.openAndSeeDialed(connection, authority, grant, target);

                Future<Http2StreamChannel> elsewhere = connection.openStream(
                        new Authority("127.0.0.1", target.getLocalPort() == 65535 ? 1 : target.getLocalPort() + 1),
                        grant, Duration.ofSeconds(10));
                assertTrue(elsewhere.await(15, TimeUnit.SECONDS));
                assertFalse(elsewhere.isSuccess(), "the grant is bound to its target");
            } finally {
                serve.close();
            }
            assertEquals(0, serve.awaitExit(), serve.captured::err);
            assertTrue(connection.channel().closeFuture().await(15, TimeUnit.SECONDS),
                    "stopping the gateway closes its tunnel connections");
            assertNoSecrets(serve.captured.out(), serve.captured.err(), token, grant); // nor any piece of one
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    void portInUseExitsWith2() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            RunningServe serve = RunningServe.start("serve", "--keys", keys, "--env", "env-1",
                    "--listen", "127.0.0.1:" + taken.getLocalPort());
            Result r = serve.result();
            serve.close();
            assertEquals(2, r.exitCode(), r::toString);
            assertEquals("", r.out());
            assertTrue(r.err().contains("env-gateway: cannot listen on 127.0.0.1:" + taken.getLocalPort()), r::toString);
            assertNull(serve.command.server());
        }
    }

    @Test
    void badServeArgumentsAreOneLineUsageErrors() {
        String[][] cases = {
                {"serve", "--keys", keys, "--env", "e", "--listen", "nonsense"},
                {"serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:70000"},
                {"serve", "--keys", keys, "--env", "e", "--listen", "::1:80"},
                {"serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0", "--tls-cert", tmp.resolve("c.pem").toString()},
                {"serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0", "--tls-key", tmp.resolve("k.pem").toString()},
                {"serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0", "--allow-target", "10.0.0.0"},
                {"serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0", "--allow-target", "10.0.0.0/99"},
                {"serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0", "--path", "tunnel"},
                {"serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0", "--max-grant-lifetime", "2d"},
                {"serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0", "--dial-timeout", "soon"},
                {"serve", "--keys", keys, "--env", "e"},
        };
        for (String[] args : cases) {
            Result r = run(args);
            assertEquals(1, r.exitCode(), () -> String.join(" ", args) + "\n" + r);
            assertEquals("", r.out(), () -> String.join(" ", args) + "\n" + r);
            r.cliErrorLine();
        }
        assertTrue(run(cases[3]).err().contains("--tls-cert and --tls-key must be given together"));
        // A file that is not there is refused (exit 3, as a missing token file: ExitCodes.REFUSED), not a usage error.
        Result missing = run("serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0", "--tls-cert", "a.pem",
                "--tls-key", "b.pem");
        assertEquals(3, missing.exitCode(), missing::toString);
        assertTrue(missing.cliErrorLine().contains("--tls-cert file a.pem does not exist"), missing::toString);
        assertTrue(run(cases[0]).err().startsWith("env-gateway: --listen must be HOST:PORT"));
    }

    @Test
    void serveWithoutKeysIsRefused() {
        Result r = run("serve", "--keys", tmp.resolve("none").toString(), "--env", "e", "--listen", "127.0.0.1:0");
        assertEquals(3, r.exitCode(), r::toString);
        r.cliErrorLine();
    }

    @Test
    void allowTargetIsWarnedAboutAndAudited() throws Exception {
        RunningServe serve = RunningServe.start("serve", "--keys", keys, "--env", "env-1", "--listen", "127.0.0.1:0",
                "--allow-target", "10.1.2.0/24", "--allow-target", "fd12::/16");
        try {
            assertNotNull(serve.command.server(), serve.captured::err);
            String err = serve.captured.err();
            assertTrue(err.contains("\"level\":\"WARN\"") && err.contains("non-loopback targets are enabled"), err);
            JsonNode audit = err.lines().filter(l -> l.contains("non_loopback_targets_enabled")).findFirst()
                    .map(l -> {
                        try {
                            return JSON.readTree(l);
                        } catch (Exception e) {
                            throw new AssertionError(l, e);
                        }
                    }).orElseThrow(() -> new AssertionError("no audit line in:\n" + err));
            assertEquals("gateway", audit.get("side").asText());
            assertEquals("10.1.2.0/24,fd12:0:0:0:0:0:0:0/16", audit.get("cidrs").asText());
        } finally {
            serve.close();
        }
        assertEquals(0, serve.awaitExit());
    }

    @Test
    void listenAddressesAreParsedAndPrintedCanonically() throws Exception {
        assertEquals("[::1]:7443", Cli.hostPort(new InetSocketAddress(InetAddress.getByName("::1"), 7443)));
        assertEquals("127.0.0.1:0", Cli.hostPort(Cli.parseListen(null, "--listen", "127.0.0.1:0", 7443)));
        assertEquals("[::1]:0", Cli.hostPort(Cli.parseListen(null, "--listen", "[::1]:0", 7443)));
        assertEquals("0.0.0.0:65535", Cli.hostPort(Cli.parseListen(null, "--listen", "0.0.0.0:65535", 7443)));
        assertTrue(Cli.parseListen(null, "--listen", "localhost:8080", 7443).getAddress().isLoopbackAddress());
    }
}
