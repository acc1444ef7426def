package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.hostile.GatewayProcess;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code serve --stdio-control --init-keys} as desktop-ingress open runs it over ssh: the real gateway in a child JVM
 * whose stdin and stdout are pipes. Keys are created on first use, a token and a grant minted over the pipes open a
 * real stream through the Unix socket, and closing stdin stops the gateway (exit 0, socket file removed).
 */
class StdioControlServeTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    @Test
    void mintsOverStdioOpensAStreamAndStopsWhenStdinCloses() throws Exception {
        Path keys = tmp.resolve("home").resolve("keys"); // neither exists: created rwx------ with parents
        Path socket = tmp.resolve("run").resolve("gw.sock");
        Path audit = tmp.resolve("audit.jsonl");
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (StdioGateway gateway = StdioGateway.start(tmp, keys, socket, "--audit-file", audit.toString());
             ServerSocket target = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            JsonNode ready = gateway.ready;
            assertEquals("ready", ready.get("event").asText());
            assertEquals("unix:" + socket, ready.get("listen").asText());
            assertEquals("rwx------", mode(keys));
            assertEquals("rw-------", mode(keys.resolve(KeyDirectory.SIGNING_KEY_FILE)));
            assertEquals("rw-------", mode(keys.resolve(KeyDirectory.VERIFY_KEYS_FILE)));

            assertEquals("{\"id\":1,\"pong\":true}", gateway.request("{\"id\":1,\"op\":\"ping\"}").toString());
            JsonNode token = gateway.request("{\"id\":2,\"op\":\"token\",\"ttl\":\"5m\"}");
            assertEquals(2, token.get("id").asInt(), token::toString);
            assertWithin(Duration.ofMinutes(5), Instant.parse(token.get("expiresAt").asText()));
            target.setSoTimeout(10_000);
            Authority authority = new Authority("127.0.0.1", target.getLocalPort());
            JsonNode grant = gateway.request("{\"id\":3,\"op\":\"grant\",\"session\":\"s-1\",\"target\":\""
                    + authority + "\"}");
            assertEquals(3, grant.get("id").asInt(), grant::toString);
            assertWithin(Duration.ofMinutes(10), Instant.parse(grant.get("expiresAt").asText()));

            TunnelConnection connection;
            try (UnixSocketForwarder forward = new UnixSocketForwarder(socket)) {
                TunnelClient client = new TunnelClient(group, NioSocketChannel.class, MuxSettings.defaults());
                connection = CliHarness.connect(client, URI.create("ws://127.0.0.1:" + forward.port() + "/tunnel"),
                        token.get("token").asText());
                CliHarness.openAndSeeDialed(connection, authority, grant.get("grant").asText(), target);

                gateway.closeStdin();
                assertTrue(gateway.process.waitFor(30, TimeUnit.SECONDS), "the gateway stops when stdin closes");
            }
            assertEquals(0, gateway.process.exitValue(), gateway::stderr);
            assertTrue(connection.channel().closeFuture().await(15, TimeUnit.SECONDS));
            assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the socket file is removed at stop");
            assertEquals(List.of(), gateway.moreStdout(), "nothing but the responses on stdout");
            String audited = Files.readString(audit);
            assertTrue(audited.contains("\"event\":\"token_issued\""), audited);
            assertTrue(audited.contains("\"event\":\"grant_issued\"") && audited.contains("\"session\":\"s-1\"")
                    && audited.contains("\"grantId\":\"" + grant.get("grantId").asText() + "\"")
                    && audited.contains("\"target\":\"" + authority + "\""), audited);
            assertTrue(gateway.stderr().contains("\"event\":\"control_ended\""), gateway::stderr);
            assertNoSecrets(audited, gateway.stderr(), token.get("token").asText(), grant.get("grant").asText());
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    void initKeysReusesKeysItFindsAndRefusesAHalfSet() throws Exception {
        Path keys = tmp.resolve("keys");
        assertEquals(0, CliHarness.run("keys", "init", "--dir", keys.toString()).exitCode());
        byte[] signing = Files.readAllBytes(keys.resolve(KeyDirectory.SIGNING_KEY_FILE));
        byte[] verify = Files.readAllBytes(keys.resolve(KeyDirectory.VERIFY_KEYS_FILE));
        Path socket = tmp.resolve("run").resolve("gw.sock");
        try (StdioGateway gateway = StdioGateway.start(tmp, keys, socket)) {
            assertEquals("{\"id\":\"a\",\"pong\":true}", gateway.request("{\"id\":\"a\",\"op\":\"ping\"}").toString());
            gateway.closeStdin();
            assertTrue(gateway.process.waitFor(30, TimeUnit.SECONDS), "the gateway stops when stdin closes");
            assertEquals(0, gateway.process.exitValue(), gateway::stderr);
        }
        assertArrayEquals(signing, Files.readAllBytes(keys.resolve(KeyDirectory.SIGNING_KEY_FILE)), "kept");
        assertArrayEquals(verify, Files.readAllBytes(keys.resolve(KeyDirectory.VERIFY_KEYS_FILE)), "kept");

        Files.delete(keys.resolve(KeyDirectory.VERIFY_KEYS_FILE));
        Result half = CliHarness.run("serve", "--keys", keys.toString(), "--env", "env-1", "--listen",
                "unix:" + socket, "--init-keys");
        assertEquals(3, half.exitCode(), half::toString);
        assertTrue(half.cliErrorLine().contains("holds " + KeyDirectory.SIGNING_KEY_FILE + " but not "
                + KeyDirectory.VERIFY_KEYS_FILE), half::toString);
        assertArrayEquals(signing, Files.readAllBytes(keys.resolve(KeyDirectory.SIGNING_KEY_FILE)), "never replaced");
        assertFalse(Files.exists(keys.resolve(KeyDirectory.VERIFY_KEYS_FILE)));
    }

    @Test
    void stdioControlNeedsTheSigningKeyAndIsNoSetting() throws Exception {
        Path keys = tmp.resolve("keys");
        assertEquals(0, CliHarness.run("keys", "init", "--dir", keys.toString()).exitCode());
        Result file = CliHarness.run("serve", "--keys", keys.resolve(KeyDirectory.VERIFY_KEYS_FILE).toString(),
                "--env", "env-1", "--listen", "127.0.0.1:0", "--stdio-control");
        assertEquals(1, file.exitCode(), file::toString);
        assertTrue(file.err().contains("--stdio-control mints grants: --keys must be the key directory"),
                file::toString);

        // The gateway keeps only the verify keys: fine for serve, not for minting. Refused before listening.
        Files.delete(keys.resolve(KeyDirectory.SIGNING_KEY_FILE));
        Path socket = tmp.resolve("run").resolve("gw.sock");
        Result noSigningKey = CliHarness.run("serve", "--keys", keys.toString(), "--env", "env-1", "--listen",
                "unix:" + socket, "--stdio-control");
        assertEquals(3, noSigningKey.exitCode(), noSigningKey::toString);
        assertTrue(noSigningKey.cliErrorLine().contains(KeyDirectory.SIGNING_KEY_FILE + " does not exist"),
                noSigningKey::toString);
        assertFalse(Files.exists(socket.getParent()), "nothing was listening");

        assertFalse(ServeCommand.CONFIG_KEYS.contains(StdioControlOptions.NOT_A_SETTING));
        assertTrue(ServeCommand.CONFIG_KEYS.contains("init-keys"));
    }

    private static void assertWithin(Duration ttl, Instant expiresAt) {
        Instant now = Instant.now();
        assertTrue(!expiresAt.isAfter(now.plus(ttl)) && expiresAt.isAfter(now.plus(ttl).minusSeconds(60)),
                () -> expiresAt + " is not about " + ttl + " from " + now);
    }

    private static String mode(Path path) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS));
    }

    /** The gateway in a child JVM with piped stdin and stdout, as ssh runs it; stderr to a file. */
    private static final class StdioGateway implements AutoCloseable {
        final Process process;
        final JsonNode ready;
        private final OutputStream stdin;
        private final BlockingQueue<String> stdout;
        private final Path stderr;

        private StdioGateway(Process process, JsonNode ready, BlockingQueue<String> stdout, Path stderr) {
            this.process = process;
            this.ready = ready;
            this.stdin = process.getOutputStream();
            this.stdout = stdout;
            this.stderr = stderr;
        }

        static StdioGateway start(Path dir, Path keys, Path socket, String... extra) throws Exception {
            List<String> command = GatewayProcess.javaCommand(List.of("-Xmx128m"));
            command.addAll(List.of("dev.previewtunnel.gateway.cli.GatewayMain", "serve", "--keys", keys.toString(),
                    "--env", "env-1", "--listen", "unix:" + socket, "--stdio-control", "--init-keys",
                    "--drain-timeout", "2s", "--state-dir", dir.resolve("state").toString()));
            command.addAll(List.of(extra));
            ProcessBuilder pb = new ProcessBuilder(command);
            pb.environment().keySet().removeIf(k -> k.startsWith("PTUN_"));
            Path err = Files.createTempFile(dir, "gateway", ".stderr");
            pb.redirectError(err.toFile());
            Process p = pb.start();
            BlockingQueue<String> lines = new LinkedBlockingQueue<>();
            Thread reader = new Thread(() -> {
                try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    for (String line; (line = out.readLine()) != null; ) {
                        lines.add(line);
                    }
                } catch (IOException e) {
                    // the process is gone
                }
            }, "test-gateway-stdout");
            reader.setDaemon(true);
            reader.start();
            String first = lines.poll(30, TimeUnit.SECONDS);
            if (first == null) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError("gateway not ready; stderr: " + Files.readString(err));
            }
            return new StdioGateway(p, JSON.readTree(first), lines, err);
        }

        /** Sends one request line and returns the next stdout line as JSON. */
        JsonNode request(String line) throws Exception {
            stdin.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            stdin.flush();
            String response = stdout.poll(30, TimeUnit.SECONDS);
            assertNotNull(response, () -> "no response to " + line + "; stderr: " + stderr());
            return JSON.readTree(response);
        }

        void closeStdin() throws IOException {
            stdin.close();
        }

        /** The stdout lines not read yet. */
        List<String> moreStdout() {
            List<String> rest = new ArrayList<>();
            stdout.drainTo(rest);
            return rest;
        }

        String stderr() {
            try {
                return Files.readString(stderr);
            } catch (IOException e) {
                return "(cannot read stderr: " + e + ")";
            }
        }

        @Override
        public void close() throws Exception {
            process.destroy();
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
