package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.cli.CliHarness.RunningServe;
import dev.previewtunnel.grants.UnverifiedGrantView;
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
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code serve --admin-listen} and {@code revoke}: the admin endpoint's address and token file, a revocation that
 * closes the live stream and refuses a new one with grant_revoked, and the exit codes when nothing answers (2) or
 * the token is wrong (3). The admin token never appears in any output.
 */
class RevokeCommandTest {
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
    void aSecondServeWithAnAdminEndpointOnTheSameStateDirectoryRefusesInOneLine() throws Exception {
        Path state = tmp.resolve("state");
        String[] args = {"serve", "--keys", keys, "--env", "e1", "--listen", "127.0.0.1:0", "--admin-listen",
                "127.0.0.1:0", "--state-dir", state.toString(), "--drain-timeout", "1s"};
        RunningServe first = RunningServe.start(args);
        try {
            String adminState = Files.readString(state.resolve("admin.json"));
            String adminToken = Files.readString(state.resolve("admin.token"));
            Result second = run(args);
            assertEquals(3, second.exitCode(), second::toString);
            assertEquals("", second.out(), second::toString);
            assertEquals("env-gateway: state directory " + state + " is in use by another env-gateway serve "
                    + "--admin-listen (pid " + ProcessHandle.current().pid() + "); stop it, or give this one another "
                    + "--state-dir", second.cliErrorLine());
            assertEquals(adminState, Files.readString(state.resolve("admin.json")));
            assertEquals(adminToken, Files.readString(state.resolve("admin.token")));
            // Without an admin endpoint nothing is written there: no lock, several gateways may share it.
            RunningServe plain = RunningServe.start("serve", "--keys", keys, "--env", "e1", "--listen",
                    "127.0.0.1:0", "--state-dir", state.toString(), "--drain-timeout", "1s");
            plain.close();
            assertEquals(0, plain.result().exitCode(), () -> plain.captured.err());
        } finally {
            first.close();
        }
        assertEquals(0, first.result().exitCode(), () -> first.captured.err());
        RunningServe next = RunningServe.start(args);
        next.close();
        assertEquals(0, next.result().exitCode(), () -> next.captured.err());
    }

    @Test
    void revokingAGrantClosesItsStreamAndRefusesNewOnes() throws Exception {
        Path state = tmp.resolve("state");
        String token = run("token", "issue", "--keys", keys, "--env", "e1").outLines().get(0);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (ServerSocket target = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            target.setSoTimeout(10_000);
            Authority authority = new Authority("127.0.0.1", target.getLocalPort());
            String grant = run("grant", "issue", "--keys", keys, "--env", "e1", "--session", "s1", "--target",
                    authority.toString()).outLines().get(0);
            String jti = UnverifiedGrantView.decode(grant).jti();

            RunningServe serve = RunningServe.start("serve", "--keys", keys, "--env", "e1", "--listen", "127.0.0.1:0",
                    "--admin-listen", "127.0.0.1:0", "--state-dir", state.toString(), "--drain-timeout", "1s");
            String adminToken;
            try {
                JsonNode ready = JSON.readTree(serve.captured.out());
                String admin = ready.get("admin").asText();
                assertTrue(admin.matches("http://127\\.0\\.0\\.1:\\d+"), admin);
                Path tokenFile = Path.of(ready.get("adminTokenFile").asText());
                assertEquals(state.resolve("admin.token").toAbsolutePath(), tokenFile);
                assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(tokenFile)));
                assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(state)));
                assertEquals(9, ready.size(), ready::toString);
                adminToken = Files.readString(tokenFile).strip();
                JsonNode adminState = JSON.readTree(Files.readString(state.resolve("admin.json")));
                assertEquals(admin, adminState.get("url").asText());
                assertFalse(adminState.toString().contains(adminToken), "admin.json never holds the token");

                TunnelConnection connection = connect(group, ready.get("url").asText(), token);
                Future<Http2StreamChannel> open = connection.openStream(authority, grant, Duration.ofSeconds(10));
                assertTrue(open.await(15, TimeUnit.SECONDS) && open.isSuccess(), () -> "open: " + open.cause());
                try (Socket accepted = target.accept()) {
                    Http2StreamChannel stream = open.getNow();

                    Result revoked = run("revoke", "--grant", jti, "--state-dir", state.toString());
                    assertEquals(0, revoked.exitCode(), revoked::toString);
                    JsonNode answer = JSON.readTree(revoked.out());
                    assertEquals("grant", answer.get("revoked").asText());
                    assertEquals(jti, answer.get("id").asText());
                    assertEquals(1, answer.get("closedStreams").asInt(), answer::toString);
                    assertTrue(stream.closeFuture().await(5, TimeUnit.SECONDS), "the live stream is reset");
                    assertEquals(-1, accepted.getInputStream().read(), "the target side is closed");
                }

                // The gateway was started with its revocation list wired into verification: refused from now on.
                Future<Http2StreamChannel> again = connection.openStream(authority, grant, Duration.ofSeconds(10));
                assertTrue(again.await(15, TimeUnit.SECONDS));
                assertFalse(again.isSuccess());
                assertEquals(TunnelError.GRANT_REVOKED,
                        assertInstanceOf(TunnelStreamException.class, again.cause()).error());

                // By session, through --admin and --admin-token-file.
                Result bySession = run("revoke", "--session", "s1", "--admin", admin, "--admin-token-file",
                        tokenFile.toString());
                assertEquals(0, bySession.exitCode(), bySession::toString);
                assertEquals("session", JSON.readTree(bySession.out()).get("revoked").asText());

                // A wrong token: refused, exit 3.
                Path wrong = tmp.resolve("wrong.token");
                Files.writeString(wrong, "not-the-admin-token\n");
                Files.setPosixFilePermissions(wrong, PosixFilePermissions.fromString("rw-------"));
                Result refused = run("revoke", "--grant", jti, "--admin", admin, "--admin-token-file", wrong.toString());
                assertEquals(3, refused.exitCode(), refused::toString);
                assertTrue(refused.cliErrorLine().contains("refused the request (token_refused"), refused::toString);
                connection.channel().close().sync();
            } finally {
                serve.close();
            }
            assertEquals(0, serve.awaitExit());
            assertFalse(Files.exists(state.resolve("admin.json")), "admin.json removed at stop");
            assertFalse(Files.exists(state.resolve("admin.token")), "admin token removed at stop");
            // Admin token, token and grant never printed or logged, nor any piece of them.
            assertNoSecrets(serve.captured.out(), serve.captured.err(), adminToken, token, grant);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    void noAdminEndpointIsExit2() throws Exception {
        Result none = run("revoke", "--grant", "abc", "--state-dir", tmp.resolve("none").toString());
        assertEquals(2, none.exitCode(), none::toString);
        assertTrue(none.cliErrorLine().contains("--admin-listen"), none::toString);
        // A JTI starting with "-h" (random base64url: about one in 2048) is the value of --grant, not the help.
        Result dashed = run("revoke", "--grant", "-hAbC_def", "--state-dir", tmp.resolve("none").toString());
        assertEquals(2, dashed.exitCode(), dashed::toString);

        Path token = tmp.resolve("t");
        Files.writeString(token, "some-token\n");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-r--r--"));
        Result loose = run("revoke", "--grant", "abc", "--admin", "http://127.0.0.1:1", "--admin-token-file",
                token.toString());
        assertEquals(3, loose.exitCode(), loose::toString); // a token file others can read or swap is not trusted
        assertTrue(loose.cliErrorLine().contains("is open to group/others"), loose::toString);
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            port = s.getLocalPort();
        }
        Result closed = run("revoke", "--grant", "abc", "--admin", "http://127.0.0.1:" + port, "--admin-token-file",
                token.toString());
        assertEquals(2, closed.exitCode(), closed::toString);
        assertTrue(closed.cliErrorLine().contains("no admin endpoint answers"), closed::toString);
    }

    @Test
    void badRevokeArgumentsAreUsageErrors() throws Exception {
        Path token = tmp.resolve("t");
        Files.writeString(token, "some-token\n");
        String[][] cases = {
                {"revoke"},
                {"revoke", "--grant", "a", "--session", "b"},
                {"revoke", "--grant", "a", "--admin", "http://127.0.0.1:1"},
                {"revoke", "--grant", "a", "--admin", "http://192.0.2.1:7444", "--admin-token-file", token.toString()},
                {"revoke", "--grant", "a", "--admin", "https://127.0.0.1:7444", "--admin-token-file", token.toString()},
        };
        for (String[] args : cases) {
            Result r = run(args);
            assertEquals(1, r.exitCode(), () -> String.join(" ", args) + "\n" + r);
            r.cliErrorLine();
        }
        Result serve = run("serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0", "--admin-listen",
                "0.0.0.0:0");
        assertEquals(1, serve.exitCode(), serve::toString);
        assertTrue(serve.cliErrorLine().contains("--admin-listen must be a loopback address"), serve::toString);
    }

    private static TunnelConnection connect(EventLoopGroup group, String url, String token) throws Exception {
        Future<TunnelConnection> f = new TunnelClient(group, NioSocketChannel.class, MuxSettings.defaults())
                .connect(URI.create(url), token, null, Duration.ofSeconds(10));
        assertTrue(f.await(15, TimeUnit.SECONDS) && f.isSuccess(), () -> "connect: " + f.cause());
        return f.getNow();
    }
}
