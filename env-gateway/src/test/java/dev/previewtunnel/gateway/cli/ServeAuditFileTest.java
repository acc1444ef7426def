package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.gateway.cli.CliHarness.RunningServe;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The audit destination is a setting ({@code --audit-file}, {@code PTUN_GATEWAY_AUDIT_FILE}, {@code "audit-file"}):
 * with it, the audit events go to that owner-only file and only there, stderr carries the application log alone;
 * an existing file others can read is refused at startup with the key and the fix.
 */
class ServeAuditFileTest {
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
    void auditEventsGoOnlyToTheOwnerOnlyFile() throws Exception {
        Path audit = tmp.resolve("audit.log");
        String token = run("token", "issue", "--keys", keys, "--env", "env-1").outLines().get(0);
        String wrongEnvToken = run("token", "issue", "--keys", keys, "--env", "env-2").outLines().get(0);
        // Through the environment variable: the setting is read like every other.
        Settings.environmentForTests(Map.of("PTUN_GATEWAY_AUDIT_FILE", audit.toString()));
        RunningServe serve;
        try {
            serve = RunningServe.start("serve", "--keys", keys, "--env", "env-1", "--listen", "127.0.0.1:0",
                    "--state-dir", tmp.resolve("state").toString());
        } finally {
            Settings.environmentForTests(null);
        }
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            URI url = URI.create(JSON.readTree(serve.captured.out()).get("url").asText());
            TunnelClient client = new TunnelClient(group, NioSocketChannel.class, MuxSettings.defaults());
            Future<TunnelConnection> refused = client.connect(url, wrongEnvToken, null, Duration.ofSeconds(10));
            assertTrue(refused.await(15, TimeUnit.SECONDS));
            assertFalse(refused.isSuccess());
            Future<TunnelConnection> accepted = client.connect(url, token, null, Duration.ofSeconds(10));
            assertTrue(accepted.await(15, TimeUnit.SECONDS));
            assertTrue(accepted.isSuccess(), () -> String.valueOf(accepted.cause()));
            accepted.getNow().channel().close().syncUninterruptibly();
        } finally {
            serve.close();
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        assertEquals(0, serve.awaitExit(), serve.captured::err);

        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(audit)));
        List<String> lines = Files.readAllLines(audit);
        List<String> events = lines.stream().map(ServeAuditFileTest::auditEvent).toList();
        assertTrue(events.containsAll(List.of("connection_refused", "connection_opened", "connection_closed")),
                events::toString);
        // A token's refusal is a token_* code in the audit line (the wire's message keeps grant_*).
        assertTrue(lines.stream().anyMatch(l -> l.contains("\"event\":\"connection_refused\"")
                && l.contains("\"code\":\"token_wrong_environment\"")), lines::toString);
        String err = serve.captured.err();
        assertTrue(err.contains("\"loggerName\":\"dev.previewtunnel.gateway"), "stderr has the application log");
        assertFalse(err.contains("\"side\":") || err.contains("connection_refused")
                || err.contains("connection_opened"), "no audit object on stderr:\n" + err);
    }

    @Test
    void anAuditFileOthersCanReadIsRefused() throws Exception {
        Path audit = Files.writeString(tmp.resolve("audit.log"), "");
        Files.setPosixFilePermissions(audit, PosixFilePermissions.fromString("rw-r--r--"));
        Result r = run("serve", "--keys", keys, "--env", "env-1", "--listen", "127.0.0.1:0", "--audit-file",
                audit.toString());
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--audit-file: " + audit + " is accessible by group/others (rw-r--r--)")
                && r.err().contains("chmod 600 " + audit), r::toString);
    }

    /** The event of an audit object (fails on anything else: an application log line in the file). */
    private static String auditEvent(String line) {
        try {
            JsonNode n = JSON.readTree(line);
            assertEquals("gateway", n.get("side").asText(), line);
            assertTrue(n.has("ts") && !n.has("loggerName"), line);
            return n.get("event").asText();
        } catch (Exception e) {
            throw new AssertionError("not an audit object: " + line, e);
        }
    }
}
