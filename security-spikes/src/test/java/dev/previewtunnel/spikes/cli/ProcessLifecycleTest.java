package dev.previewtunnel.spikes.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.sampleapp.SampleApp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.Authenticator;
import java.net.InetSocketAddress;
import java.net.PasswordAuthentication;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The command-line contract of issue 2 against the real jars, as other tools script it: keys, token and grant
 * from {@code env-gateway}, {@code serve} and {@code run} each printing their ready line, one request through the
 * proxy, then SIGTERM ({@link Process#destroy()}) to each: exit 0, a {@code stopped} log line, state cleaned up.
 */
class ProcessLifecycleTest {
    private static final Duration CLI = Duration.ofSeconds(60);
    private static final ObjectMapper JSON = new ObjectMapper();
    static SampleApp app;
    static Path dir;

    @BeforeAll
    static void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        dir = Files.createTempDirectory("ptun-cli");
    }

    @AfterAll
    static void stop() throws Exception {
        app.close();
        CliProcess.deleteStateHome();
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    @Test
    void gatewayAndIngressServeARequestAndStopCleanlyOnSigterm() throws Exception {
        Path keys = dir.resolve("keys");
        CliProcess init = CliProcess.run(CLI, "env-gateway", "keys", "init", "--dir", keys.toString());
        assertEquals(0, init.process.exitValue(), init.stderr());
        CliProcess tokenIssue = CliProcess.run(CLI, "env-gateway", "token", "issue", "--keys", keys.toString(),
                "--env", "cli-env");
        assertEquals(0, tokenIssue.process.exitValue(), tokenIssue.stderr());
        String token = tokenIssue.stdout().trim();
        CliProcess grantIssue = CliProcess.run(CLI, "env-gateway", "grant", "issue", "--keys", keys.toString(),
                "--env", "cli-env", "--session", "cli-session", "--target", "localhost:" + app.port(), "--ttl", "10m");
        assertEquals(0, grantIssue.process.exitValue(), grantIssue.stderr());
        String grant = grantIssue.stdout().trim();
        assertEquals(3, grant.split("\\.").length, "grant issue prints one JWT");
        assertFalse(tokenIssue.stderr().contains(token), "the token appears only on stdout");
        assertFalse(grantIssue.stderr().contains(grant), "the grant appears only on stdout");

        try (CliProcess gateway = CliProcess.start("env-gateway", "serve", "--keys", keys.toString(),
                "--env", "cli-env", "--listen", "127.0.0.1:0")) {
            JsonNode gatewayReady = gateway.awaitReady(CLI);
            String url = gatewayReady.get("url").asText();
            assertTrue(url.startsWith("ws://" + gatewayReady.get("listen").asText() + "/"), gatewayReady.toString());

            Path credentials;
            String password;
            try (CliProcess ingress = CliProcess.start("desktop-ingress", "run", "--gateway", url, "--token", token,
                    "--grant", grant, "--listen", "127.0.0.1:0")) {
                JsonNode ready = ingress.awaitReady(CLI);
                credentials = Path.of(ready.get("credentialsFile").asText());
                assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                        Files.getPosixFilePermissions(credentials), "credentials file is owner-only");
                JsonNode cred = JSON.readTree(credentials.toFile());
                String user = cred.get("username").asText();
                password = cred.get("password").asText();
                String[] proxy = ready.get("proxy").asText().split(":");
                HttpClient client = HttpClient.newBuilder()
                        .version(HttpClient.Version.HTTP_1_1)
                        .proxy(ProxySelector.of(new InetSocketAddress(proxy[0], Integer.parseInt(proxy[1]))))
                        .authenticator(new Authenticator() {
                            @Override
                            protected PasswordAuthentication getPasswordAuthentication() {
                                return new PasswordAuthentication(user, password.toCharArray());
                            }
                        })
                        .build();
                CliTunnel.assertPatternDownload(client, app.port(), 1024 * 1024);

                ingress.process.destroy(); // SIGTERM
                int ingressExit = ingress.awaitExit(Duration.ofSeconds(30));
                System.out.println("ingress stderr after SIGTERM:\n" + ingress.stderr());
                assertEquals(0, ingressExit, "ingress exit code; stderr: " + ingress.stderr());
                assertTrue(hasEvent(ingress.stderrLines(), "stopped"), "ingress logs stopped: " + ingress.stderr());
                // The session outlives the process (issue 17): its credential stays, owner-only, for the next run.
                assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                        Files.getPosixFilePermissions(credentials), "credentials file kept, owner-only: " + credentials);
                assertNoSecrets("ingress", ingress, token, grant, password);
            }

            gateway.process.destroy(); // SIGTERM
            assertEquals(0, gateway.awaitExit(Duration.ofSeconds(30)), "gateway exit code; stderr: "
                    + gateway.stderr());
            assertTrue(hasEvent(gateway.stderrLines(), "stopped"), "gateway logs stopped: " + gateway.stderr());
            assertNoSecrets("gateway", gateway, token, grant, password);
        }
    }

    @Test
    void aSecondRunOnOneStateDirectoryRefusesInOneLineAndAKilledOneDoesNotBlockTheNext() throws Exception {
        Path keys = dir.resolve("lock-keys");
        Path token = dir.resolve("lock-token");
        assertEquals(0, CliProcess.run(CLI, "env-gateway", "keys", "init", "--dir", keys.toString())
                .process.exitValue());
        CliProcess issue = CliProcess.run(CLI, "env-gateway", "token", "issue", "--keys", keys.toString(), "--env",
                "cli-env", "-o", token.toString());
        assertEquals(0, issue.process.exitValue(), issue.stderr());
        assertEquals("", issue.stdout(), "with -o the token goes to the file only");
        assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                Files.getPosixFilePermissions(token));
        Path state = dir.resolve("lock-state");
        try (CliProcess gateway = CliProcess.start("env-gateway", "serve", "--keys", keys.toString(),
                "--env", "cli-env", "--listen", "127.0.0.1:0")) {
            String url = gateway.awaitReady(CLI).get("url").asText();
            String[] run = {"run", "--gateway", url, "--token-file", token.toString(), "--listen", "127.0.0.1:0",
                    "--pool", "1", "--state-dir", state.toString()};
            try (CliProcess first = CliProcess.start("desktop-ingress", run)) {
                first.awaitReady(CLI);
                String control = Files.readString(state.resolve("control.json"));
                String credentials = Files.readString(state.resolve("session-default.credentials.json"));

                CliProcess second = CliProcess.run(CLI, "desktop-ingress", run);
                System.out.printf("{\"test\":\"second_run\",\"exit\":%d,\"stderr\":%s}%n",
                        second.process.exitValue(), JSON.writeValueAsString(second.stderrLines()));
                assertEquals(3, second.process.exitValue(), second.stderr());
                assertEquals("", second.stdout());
                assertEquals(List.of("desktop-ingress: state directory " + state + " is in use by another "
                        + "desktop-ingress run (pid " + first.process.pid() + "); stop it, or give this one another "
                        + "--state-dir"), second.stderrLines());
                assertEquals(control, Files.readString(state.resolve("control.json")), "the first one's, untouched");
                assertEquals(credentials, Files.readString(state.resolve("session-default.credentials.json")));

                first.signal("KILL"); // no shutdown hook runs: control.json and run.lock stay behind
                first.awaitExit(CLI);
                assertTrue(Files.exists(state.resolve("run.lock")));
            }
            try (CliProcess next = CliProcess.start("desktop-ingress", run)) {
                assertEquals("default", next.awaitReady(CLI).get("session").asText(), next.stderr());
            }
        }
    }

    @Test
    void badArgumentsExitNonZeroWithOneLineReason() throws Exception {
        List<List<String>> cases = List.of(
                List.of("env-gateway", "serve", "--listen", "127.0.0.1:0"),           // no --keys
                List.of("env-gateway", "grant", "issue", "--keys", dir.toString()),   // no --env/--session/--target
                List.of("desktop-ingress", "run", "--bogus"),
                List.of("desktop-ingress", "run", "--gateway", "not a url", "--token", "t", "--listen", "127.0.0.1:0"));
        for (List<String> c : cases) {
            CliProcess p = CliProcess.run(CLI, c.get(0), c.subList(1, c.size()).toArray(String[]::new));
            List<String> err = p.stderrLines();
            System.out.printf("{\"test\":\"bad_arguments\",\"command\":\"%s\",\"exit\":%d,\"stderr\":%s}%n",
                    String.join(" ", c), p.process.exitValue(), JSON.writeValueAsString(err));
            assertNotEquals(0, p.process.exitValue(), c + " exits non-zero");
            assertEquals(1, err.size(), c + " prints one line on stderr: " + err);
            assertFalse(err.get(0).isBlank(), c + " says why");
            assertEquals("", p.stdout(), c + " prints nothing on stdout");
        }
    }

    /** A JSON log line with {@code event}: top-level (audit lines) or in logback's key-value list (app lines). */
    private static boolean hasEvent(List<String> lines, String event) throws Exception {
        for (String line : lines) {
            if (!line.startsWith("{")) {
                continue;
            }
            JsonNode json = JSON.readTree(line);
            if (event.equals(json.path("event").asText())) {
                return true;
            }
            for (JsonNode kv : json.path("kvpList")) {
                if (event.equals(kv.path("event").asText())) {
                    return true;
                }
            }
        }
        return false;
    }

    private static void assertNoSecrets(String what, CliProcess p, String... secrets) {
        String out = p.stdout() + "\n" + p.stderr();
        for (String s : secrets) {
            assertFalse(out.contains(s), what + " output contains a secret");
            // A JWT's signature alone is a secret too (a log could print a truncated token).
            String tail = s.substring(s.lastIndexOf('.') + 1);
            assertFalse(tail.length() >= 16 && out.contains(tail), what + " output contains part of a secret");
        }
    }
}
