package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.cli.FakeEnvironment;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.testing.Await;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;

import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static dev.previewtunnel.cli.InProcessCli.concat;
import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code run} configured from a JSON file and PTUN_INGRESS_* variables (flags override both; bad values stop the
 * start with the key and the reason), and the grant refresh hook wired from the command line.
 */
class RunConfigTest {
    @TempDir
    static Path shared;
    static TestStack stack;

    @TempDir
    Path tmp;
    @RegisterExtension
    final FakeEnvironment env = new FakeEnvironment();

    @BeforeAll
    static void start() throws Exception {
        stack = TestStack.start(shared);
    }

    @AfterAll
    static void stop() {
        if (stack != null) {
            stack.close();
        }
    }

    @Test
    void fromAConfigFileAndTheEnvironment() throws Exception {
        String token = stack.token();
        String grant = stack.grant("cfg", stack.app.port());
        TestStack.secretFile(tmp, "token", token + "\n");
        TestStack.secretFile(tmp, "grant", grant + "\n");
        // Relative paths are relative to the file; the session id comes from the file, the pool from the env.
        Path config = Files.writeString(tmp.resolve("ingress.json"), """
                {"gateway": "%s", "token-file": "token", "grant-file": ["grant"], "state-dir": "state",
                 "session-id": "cfg", "pool": 3, "io-threads": 2, "metrics-listen": "127.0.0.1:0"}
                """.formatted(stack.url()));
        env.put("PTUN_INGRESS_POOL", "1");
        env.put("PTUN_INGRESS_CONTROL", "false");
        RunningIngress running = RunningIngress.start("run", "--config", config.toString(), "--drain-timeout", "PT0.1S");
        try {
            JsonNode ready = running.readyLine();
            assertEquals("cfg", ready.get("session").asText());
            assertEquals(tmp.resolve("state").resolve("session-cfg.credentials.json").toAbsolutePath().toString(),
                    ready.get("credentialsFile").asText());
            assertTrue(ready.has("metrics") && !ready.has("controlStateFile"), ready::toString);
            // The setting itself: the pool keeps at least one connection per event loop whatever it says.
            assertEquals(1, running.command.ingress().config().poolSize(), "env over file");
            assertEquals(2, running.command.ingress().config().ioThreads(), "from the file");
            Await.until("a tunnel connection on each of the two loops", Duration.ofSeconds(10),
                    () -> running.command.ingress().pool().status().connected() == 2);
            HttpResponse<String> hello = TestStack.proxiedClient(ready.get("proxy").asText(),
                    Path.of(ready.get("credentialsFile").asText())).send(HttpRequest.newBuilder(URI.create(
                    "http://localhost:" + stack.app.port() + "/hello")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(SampleApp.HELLO_BODY, hello.body());
        } finally {
            running.close();
        }
        assertNoSecrets(running.captured.out(), running.captured.err(), token, grant);
    }

    @Test
    void badValuesFailAtStartupWithTheKeyAndTheReason() throws Exception {
        String token = stack.token();
        String[] base = {"run", "--gateway", stack.url(), "--token", token, "--state-dir", tmp.toString()};
        env.put("PTUN_INGRESS_POOL", "100");
        Result pool = run(base);
        assertTrue(pool.usageError().contains("pool (from PTUN_INGRESS_POOL) must be 1 to 64, got 100"), pool::toString);
        env.put("PTUN_INGRESS_POOL", "lots");
        assertTrue(run(base).usageError().contains("pool (from PTUN_INGRESS_POOL): must be a whole number, got 'lots'"));
        env.clear();
        env.put("PTUN_INGRESS_IO_THREADS", "64");
        assertTrue(run(base).usageError()
                .contains("io-threads (from PTUN_INGRESS_IO_THREADS) must be 1 to 16, got 64"));
        env.clear();
        env.put("PTUN_INGRESS_LISTEN", "0.0.0.0:8080");
        assertTrue(run(base).usageError().contains("listen (from PTUN_INGRESS_LISTEN) must be a loopback address"));
        env.clear();
        env.put("PTUN_INGRESS_CONTROL", "perhaps");
        assertTrue(run(base).usageError().contains("control (from PTUN_INGRESS_CONTROL): must be true or false"));
        env.clear();
        Path config = Files.writeString(tmp.resolve("c.json"), "{\"token\": \"" + token + "\"}");
        Result secretInFile = run("run", "--config", config.toString());
        assertTrue(secretInFile.usageError().contains("secrets never go in a config file"), secretInFile::toString);
        assertNoSecrets(secretInFile.out(), secretInFile.err(), token);
        env.put("PTUN_INGRESS_GATEWAY", "http://127.0.0.1:1/tunnel");
        assertTrue(run("run", "--token", token).usageError()
                .contains("gateway (from PTUN_INGRESS_GATEWAY) must be a ws:// or wss:// URL"));
        env.clear();
        Result missing = run("run", "--token", token);
        assertTrue(missing.usageError().contains("missing --gateway URL (or PTUN_INGRESS_GATEWAY, or \"gateway\" in "
                + "a --config file)"), missing::toString);
        Result refresh = run(concat(base, "--grant-refresh-command", "/x", "--grant-refresh-url", "http://127.0.0.1:1/"));
        assertTrue(refresh.usageError().contains("either --grant-refresh-command or --grant-refresh-url"));
        Result notExecutable = run(concat(base, "--grant-refresh-command", tmp.resolve("none.sh").toString()));
        assertTrue(notExecutable.usageError().contains("--grant-refresh-command must name an executable file"));
    }

    @Test
    void aRevokedGrantIsRefreshedByTheCommand() throws Exception {
        String token = stack.token();
        String old = stack.grant("default", stack.app.port());
        String fresh = stack.grant("default", stack.app.port());
        Path freshFile = TestStack.secretFile(tmp, "fresh", fresh + "\n");
        Path script = tmp.resolve("refresh.sh");
        Files.writeString(script, "#!/bin/sh\n# prints a new grant for $PTUN_TARGET\ncat \"$1\"\n");
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwx------"));
        RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token", token, "--grant",
                old, "--state-dir", tmp.resolve("s").toString(), "--grant-refresh-command", script.toString(),
                "--grant-refresh-arg", freshFile.toString(), "--drain-timeout", "PT0.1S");
        try {
            JsonNode ready = running.readyLine();
            stack.gateway.revocations().revokeGrant(UnverifiedGrantView.decode(old).jti());
            HttpResponse<String> hello = TestStack.proxiedClient(ready.get("proxy").asText(),
                    Path.of(ready.get("credentialsFile").asText())).send(HttpRequest.newBuilder(URI.create(
                    "http://localhost:" + stack.app.port() + "/hello")).timeout(Duration.ofSeconds(20)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, hello.statusCode(), "refreshed once and retried: " + hello.body());
            assertEquals(SampleApp.HELLO_BODY, hello.body());
        } finally {
            running.close();
        }
        assertNoSecrets(running.captured.out(), running.captured.err(), token, old, fresh);
    }
}
