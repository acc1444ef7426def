package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.GatewayCrash;
import dev.previewtunnel.cli.FakeEnvironment;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.cli.InProcessCli.Captured;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.testing.Await;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code desktop-ingress doctor} against a real gateway, target and running ingress: healthy is all ok; each usual
 * misconfiguration (gateway unreachable, wrong path, token refused, token for another environment, target not
 * listening, proxy not running, credentials readable by others, clock skew, an environment's own gateway
 * unreachable or its token file readable by others) is caught by its own check with its own message and exit code.
 * Doctor never prints a token or a grant.
 */
class IngressDoctorTest {
    private static final ObjectMapper JSON = new ObjectMapper();

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

    private static Map<String, List<JsonNode>> checks(Result r) throws Exception {
        Map<String, List<JsonNode>> byName = new HashMap<>();
        for (String line : r.out().lines().toList()) {
            JsonNode n = JSON.readTree(line);
            byName.computeIfAbsent(n.get("check").asText(), k -> new ArrayList<>()).add(n);
        }
        return byName;
    }

    private static JsonNode only(Map<String, List<JsonNode>> checks, String name) {
        List<JsonNode> list = checks.get(name);
        assertNotNull(list, () -> "no " + name + " check in " + checks);
        assertEquals(1, list.size(), list::toString);
        return list.get(0);
    }

    private static String failure(Result r, String name) throws Exception {
        JsonNode n = only(checks(r), name);
        assertEquals("fail", n.get("status").asText(), () -> n + "\n" + r);
        return n.get("message").asText();
    }

    private Path file(String name, String content) throws Exception {
        return TestStack.secretFile(tmp, name, content + "\n");
    }

    private Result doctor(String... args) {
        String[] all = new String[args.length + 2];
        all[0] = "doctor";
        all[1] = "--json";
        System.arraycopy(args, 0, all, 2, args.length);
        return run(all);
    }

    @Test
    void aHealthySetupIsAllOk() throws Exception {
        String token = stack.token();
        String grant = stack.grant("default", stack.app.port());
        Path tokenFile = file("token", token);
        Path grantFile = file("grant", grant);
        Path state = tmp.resolve("state");
        RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token-file",
                tokenFile.toString(), "--grant-file", grantFile.toString(), "--state-dir", state.toString());
        try {
            running.readyLine();
            // The ready line does not wait for the tunnel (an ingress starts while its gateway is down); a healthy
            // setup is one whose tunnel is up, so wait for that before asking doctor.
            Await.until("the ingress's first tunnel connection", Duration.ofSeconds(10),
                    () -> running.command.ingress().pool().status().connected() > 0);
            // The gateway URL comes from the running ingress when not given.
            Result r = run("doctor", "--state-dir", state.toString(), "--token-file", tokenFile.toString(),
                    "--grant-file", grantFile.toString());
            assertEquals(0, r.exitCode(), r::toString);
            for (String check : List.of("state-dir", "credentials", "proxy", "gateway", "clock", "token", "target")) {
                assertTrue(r.out().lines().anyMatch(l -> l.startsWith("ok    " + check + " ")),
                        () -> check + " not ok in:\n" + r.out());
            }
            assertTrue(r.out().contains("--proxy-server=http://" + running.readyLine().get("proxy").asText()));
            // The running ingress's (here the test JVM's) limits and how to change them (issue 21).
            assertTrue(r.out().lines().anyMatch(l -> l.startsWith("ok    jvm ") && l.contains("max heap ")
                    && l.contains(" MiB, max direct memory ") && l.contains(", collector ")
                    && l.contains("PREVIEW_TUNNEL_JAVA_OPTIONS")), r::toString);
            assertTrue(r.out().contains("desktop-ingress doctor: everything checked is fine"), r::toString);
            assertNoSecrets(r.out(), r.err(), token, grant);
        } finally {
            running.close();
        }
    }

    /**
     * Two environments, each with its own gateway, keys and token: doctor reads the environment settings as 'run'
     * does (here from the config file, relative paths from its directory), checks each gateway and token with
     * its own labelled checks, and opens each grant's target through its own environment's gateway, so all is
     * ok (before, the staging grant went to the default gateway and failed with grant_wrong_environment).
     * Without those settings doctor warns that it does not check staging's gateway; with staging's gateway
     * down it warns that the running ingress's staging pool reconnects and fails the staging gateway check.
     */
    @Test
    void aHealthyTwoEnvironmentSetupIsAllOk() throws Exception {
        try (TestStack staging = TestStack.start(tmp.resolve("staging-env"), "staging")) {
            String token = stack.token();
            String stagingToken = staging.token();
            String grant = stack.grant("default", stack.app.port());
            String stagingGrant = staging.grant("default", staging.app.port());
            Path tokenFile = file("token", token);
            Path stagingTokenFile = file("staging.token", stagingToken);
            Path grantFile = file("grants", grant + "\n" + stagingGrant);
            Path state = tmp.resolve("state");
            RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token-file",
                    tokenFile.toString(), "--environment-gateway", "staging=" + staging.url(),
                    "--environment-token-file", "staging=" + stagingTokenFile, "--grant-file", grantFile.toString(),
                    "--state-dir", state.toString());
            try {
                running.readyLine();
                Await.until("both pools' first tunnel connection", Duration.ofSeconds(10),
                        () -> running.command.ingress().pool().status().connected() > 0
                                && running.command.ingress().pools().forEnvironment("staging").status()
                                .connected() > 0);
                Path config = Files.writeString(tmp.resolve("ingress.json"), """
                        {"gateway": "%s", "token-file": "token", "grant-file": ["grants"], "state-dir": "state",
                         "environment-gateway": ["staging=%s"], "environment-token-file": ["staging=staging.token"]}
                        """.formatted(stack.url(), staging.url()));
                Result r = doctor("--config", config.toString());
                assertEquals(0, r.exitCode(), r::toString);
                Map<String, List<JsonNode>> checks = checks(r);
                for (List<JsonNode> list : checks.values()) {
                    for (JsonNode n : list) {
                        assertEquals("ok", n.get("status").asText(), () -> n + "\n" + r);
                    }
                }
                for (String check : List.of("state-dir", "credentials", "proxy", "gateway", "clock", "token",
                        "token-file", "grant-file", "environment-token-file", "environment-gateway",
                        "environment-token", "environment-clock")) {
                    assertNotNull(checks.get(check), () -> check + " missing in:\n" + r.out());
                }
                String stagingPort = staging.url().replaceAll("^ws://127\\.0\\.0\\.1:(\\d+)/.*$", "$1");
                assertTrue(only(checks, "environment-gateway").get("message").asText().startsWith(
                        "gateway of environment 'staging' at 127.0.0.1:" + stagingPort + "/tunnel reachable"), r::toString);
                assertTrue(only(checks, "environment-token").get("message").asText().startsWith(
                        "the gateway of environment 'staging' accepted the connection token (environment 'staging'"),
                        r::toString);
                List<String> targets = checks.get("target").stream().map(n -> n.get("message").asText()).toList();
                assertEquals(List.of("localhost:" + stack.app.port() + " opens through the tunnel",
                                "localhost:" + staging.app.port() + " opens through the tunnel"),
                        targets.stream().map(m -> m.substring(0, m.indexOf(" (grant "))).toList(), targets::toString);
                assertTrue(targets.get(0).endsWith("environment 'e1')") && targets.get(1).endsWith(
                        "environment 'staging')"), targets::toString);
                assertNoSecrets(r.out(), r.err(), token, stagingToken, grant, stagingGrant);

                // Without the environment settings, doctor says which environment's gateway it does not check.
                Result without = doctor("--state-dir", state.toString(), "--token-file", tokenFile.toString());
                JsonNode unnamed = only(checks(without), "environment-gateway");
                assertEquals("warn", unnamed.get("status").asText(), without::toString);
                assertTrue(unnamed.get("message").asText().startsWith("the running ingress sends environment "
                        + "'staging' to a gateway of its own (" + staging.url() + ") that these settings do not "
                        + "name"), without::toString);

                // Staging's gateway dies: doctor sees the running ingress's staging pool reconnecting, and fails
                // the staging gateway check naming the environment; the default gateway's checks stay ok.
                GatewayCrash.crash(staging.gateway);
                Await.until("the staging pool lost its connections", Duration.ofSeconds(10),
                        () -> running.command.ingress().pools().forEnvironment("staging").status().connected() == 0);
                Result down = doctor("--config", config.toString());
                Map<String, List<JsonNode>> downChecks = checks(down);
                JsonNode reconnecting = only(downChecks, "environment-tunnel");
                assertEquals("warn", reconnecting.get("status").asText(), down::toString);
                assertTrue(reconnecting.get("message").asText().startsWith("the running ingress is reconnecting to "
                        + "the gateway of environment 'staging' since "), down::toString);
                assertTrue(failure(down, "environment-gateway").startsWith("cannot reach the gateway of "
                        + "environment 'staging' at 127.0.0.1:" + stagingPort), down::toString);
                assertEquals("ok", only(downChecks, "gateway").get("status").asText(), down::toString);
                assertEquals(null, downChecks.get("tunnel"), "the default pool is connected: " + down);
            } finally {
                running.close();
            }
        }
    }

    /** An environment's token file others can read fails its own check, with its own message and the fix. */
    @Test
    void anEnvironmentTokenFileReadableByOthers() throws Exception {
        try (TestStack staging = TestStack.start(tmp.resolve("staging-env"), "staging")) {
            String token = stack.token();
            String stagingToken = staging.token();
            Path tokenFile = file("token", token);
            Path stagingTokenFile = file("staging.token", stagingToken);
            for (Path f : List.of(tokenFile, stagingTokenFile)) {
                Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r-----"));
            }
            Result r = doctor("--gateway", stack.url(), "--token-file", tokenFile.toString(),
                    "--environment-gateway", "staging=" + staging.url(), "--environment-token-file",
                    "staging=" + stagingTokenFile, "--state-dir", tmp.toString());
            String m = failure(r, "environment-token-file");
            assertTrue(m.startsWith(stagingTokenFile + " is accessible by group/others (rw-r-----); it holds the "
                    + "connection token of the gateway of environment 'staging'")
                    && m.endsWith(": chmod 600 " + stagingTokenFile), m);
            String defaultMessage = failure(r, "token-file");
            assertNotEquals(defaultMessage.replace(tokenFile.toString(), "FILE"),
                    m.replace(stagingTokenFile.toString(), "FILE"), "each token file says whose token it holds");
            // Only its permissions are wrong: the gateway still accepts the token.
            assertEquals("ok", only(checks(r), "environment-token").get("status").asText(), r::toString);
            assertNoSecrets(r.out(), r.err(), token, stagingToken);

            Files.setPosixFilePermissions(stagingTokenFile, PosixFilePermissions.fromString("rw-------"));
            Result fixed = doctor("--gateway", stack.url(), "--token-file", tokenFile.toString(),
                    "--environment-gateway", "staging=" + staging.url(), "--environment-token-file",
                    "staging=" + stagingTokenFile, "--state-dir", tmp.toString());
            assertEquals("ok", only(checks(fixed), "environment-token-file").get("status").asText(), fixed::toString);
        }
    }

    /**
     * An environment's own gateway that does not answer fails the check environment-gateway naming the
     * environment (settings from PTUN_INGRESS_* variables); the default gateway's checks stay ok, and that
     * environment's grants are not sent to the default gateway instead.
     */
    @Test
    void anEnvironmentGatewayUnreachable() throws Exception {
        int port = TestStack.closedPort();
        String stagingGrant = stack.issuer.issueGrant(GrantSpec.tcp("staging", "default", "localhost", 5173),
                Duration.ofMinutes(10));
        String grant = stack.grant("default", stack.app.port());
        env.put("PTUN_INGRESS_ENVIRONMENT_GATEWAY", "staging=ws://127.0.0.1:" + port + "/tunnel");
        env.put("PTUN_INGRESS_ENVIRONMENT_TOKEN_FILE", "staging=" + file("staging.token", stack.token()));
        Result r = doctor("--gateway", stack.url(), "--token-file", file("token", stack.token()).toString(),
                "--grant-file", file("grants", grant + "\n" + stagingGrant).toString(), "--state-dir",
                tmp.toString());
        assertEquals(2, r.exitCode(), r::toString);
        String m = failure(r, "environment-gateway");
        assertTrue(m.startsWith("cannot reach the gateway of environment 'staging' at 127.0.0.1:" + port)
                && m.contains("ssh -N -L"), m);
        Map<String, List<JsonNode>> checks = checks(r);
        assertEquals("ok", only(checks, "gateway").get("status").asText(), r::toString);
        assertEquals("ok", only(checks, "token").get("status").asText(), r::toString);
        assertEquals(null, checks.get("environment-token"), "no token check without a gateway to ask");
        List<JsonNode> targets = checks.get("target");
        assertEquals(2, targets.size(), targets::toString);
        assertEquals("ok", targets.get(0).get("status").asText(), targets::toString);
        assertEquals("skip", targets.get(1).get("status").asText(), targets::toString);
        assertTrue(targets.get(1).get("message").asText().startsWith("cannot open the targets of environment "
                + "'staging' without the gateway of environment 'staging' accepting its token"), targets::toString);
        assertNoSecrets(r.out(), r.err(), grant, stagingGrant);
    }

    @Test
    void gatewayUnreachable() throws Exception {
        int port = TestStack.closedPort();
        Result r = doctor("--gateway", "ws://127.0.0.1:" + port + "/tunnel", "--state-dir", tmp.toString());
        assertEquals(2, r.exitCode(), r::toString);
        String m = failure(r, "gateway");
        assertTrue(m.startsWith("cannot reach the gateway at 127.0.0.1:" + port) && m.contains("ssh -N -L"), m);
    }

    @Test
    void wrongTunnelPath() throws Exception {
        String url = stack.url().replace("/tunnel", "/wrong");
        Result r = doctor("--gateway", url, "--token-file", file("token", stack.token()).toString(),
                "--state-dir", tmp.toString());
        assertTrue(failure(r, "gateway").startsWith("no tunnel endpoint at path /wrong"), r::toString);
    }

    @Test
    void tokenSignedByAKeyTheGatewayDoesNotTrust() throws Exception {
        KeyDirectory other = KeyDirectory.init(tmp.resolve("other-keys"));
        String token = new GrantIssuer(other.signingKey(), Clock.systemUTC())
                .issueConnectionToken(TestStack.ENV, Duration.ofHours(1));
        Result r = doctor("--gateway", stack.url(), "--token-file", file("token", token).toString(),
                "--state-dir", tmp.toString());
        String m = failure(r, "token");
        assertTrue(m.contains("(grant_unknown_key)") && m.contains("a key the gateway does not trust")
                && m.contains("kid " + other.signingKey().kid()), m);
        assertNoSecrets(r.out(), r.err(), token);
    }

    @Test
    void tokenForAnotherEnvironment() throws Exception {
        String token = stack.issuer.issueConnectionToken("staging", Duration.ofHours(1));
        Result r = doctor("--gateway", stack.url(), "--token-file", file("token", token).toString(),
                "--state-dir", tmp.toString());
        String m = failure(r, "token");
        assertTrue(m.contains("(grant_wrong_environment)") && m.contains("environment 'staging'")
                && m.contains("token issue --env"), m);
        assertNoSecrets(r.out(), r.err(), token);
    }

    @Test
    void targetNotListeningInTheEnvironment() throws Exception {
        int port = TestStack.closedPort();
        String grant = stack.grant("default", port);
        Result r = doctor("--gateway", stack.url(), "--token-file", file("token", stack.token()).toString(),
                "--grant-file", file("grant", grant).toString(), "--state-dir", tmp.toString());
        String m = failure(r, "target");
        assertTrue(m.equals("nothing listens on localhost:" + port + " in the environment (target_refused): start "
                + "the dev server there; browsers get a 502 page meanwhile"), m);
        assertEquals("ok", only(checks(r), "token").get("status").asText(), "the token itself is fine");
        assertNoSecrets(r.out(), r.err(), grant);
    }

    @Test
    void proxyNotRunning() throws Exception {
        Result r = doctor("--gateway", stack.url(), "--state-dir", tmp.resolve("empty").toString());
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(failure(r, "proxy").startsWith("no desktop-ingress is running with state directory"), r::toString);
        assertFalse(Files.exists(tmp.resolve("empty")), "doctor creates nothing");
    }

    @Test
    void credentialsReadableByOthers() throws Exception {
        Path state = tmp.resolve("state");
        Path creds = TestStack.secretFile(state, "session-web.credentials.json",
                "{\"username\":\"ptun-web\",\"password\":\"pw-that-must-not-show-123\"}");
        Files.setPosixFilePermissions(creds, PosixFilePermissions.fromString("rw-r--r--"));
        Result r = doctor("--gateway", stack.url(), "--state-dir", state.toString());
        assertEquals(3, r.exitCode(), "credentials come first: " + r);
        String m = failure(r, "credentials");
        assertTrue(m.contains(creds + " is readable by group/others (rw-r--r--)") && m.contains("chmod 600 " + creds), m);
        assertNoSecrets(r.out(), r.err(), "pw-that-must-not-show-123");
    }

    /** sessions.json keeps the sessions' grants across restarts (issue 17): a secret file like the credentials. */
    @Test
    void savedSessionsReadableByOthers() throws Exception {
        Path state = tmp.resolve("state");
        Path saved = TestStack.secretFile(state, "sessions.json",
                "{\"sessions\":[{\"id\":\"web\",\"grants\":[{\"grant\":\"grant-that-must-not-show-456\"}]}]}");
        Files.setPosixFilePermissions(saved, PosixFilePermissions.fromString("rw-r--r--"));
        Result r = doctor("--gateway", stack.url(), "--state-dir", state.toString());
        assertEquals(3, r.exitCode(), "credentials come first: " + r);
        String m = failure(r, "credentials");
        assertTrue(m.contains(saved + " is readable by group/others (rw-r--r--)") && m.contains("the grants it holds")
                && m.contains("chmod 600 " + saved), m);
        assertNoSecrets(r.out(), r.err(), "grant-that-must-not-show-456");
    }

    /** Each secret or trust file 'run' reads is checked to be owner-only, with its own check and message. */
    @Test
    void secretAndTrustFilesReadableByOthers() throws Exception {
        String token = stack.token();
        String grant = stack.grant("default", stack.app.port());
        Path tokenFile = file("token", token);
        Path grantFile = file("grant", grant);
        Path ca = file("ca.pem", "-----BEGIN CERTIFICATE-----");
        Path refresh = file("refresh-token", "refresh-secret-that-must-not-show-1234");
        List<String> messages = new ArrayList<>();
        for (Path f : List.of(tokenFile, grantFile, refresh)) {
            Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r--r--"));
        }
        Files.setPosixFilePermissions(ca, PosixFilePermissions.fromString("rw-rw-r--")); // public, but not writable
        Result r = doctor("--gateway", stack.url(), "--state-dir", tmp.toString(), "--token-file", tokenFile.toString(),
                "--grant-file", grantFile.toString(), "--gateway-ca", ca.toString(), "--grant-refresh-token-file",
                refresh.toString());
        Map<String, Path> byCheck = Map.of("token-file", tokenFile, "grant-file", grantFile, "gateway-ca", ca,
                "grant-refresh-token-file", refresh);
        for (Map.Entry<String, Path> e : byCheck.entrySet()) {
            String m = failure(r, e.getKey());
            assertTrue(m.startsWith(e.getValue() + (e.getValue().equals(ca)
                    ? " is writable by group/others (rw-rw-r--); it holds "
                    : " is accessible by group/others (rw-r--r--); it holds "))
                    && m.endsWith(": chmod 600 " + e.getValue()), m);
            messages.add(m.replace(e.getValue().toString(), "FILE"));
        }
        assertEquals(4, messages.stream().distinct().count(), "each file says what it holds: " + messages);
        assertNoSecrets(r.out(), r.err(), token, grant, "refresh-secret-that-must-not-show-1234");

        for (Path f : List.of(tokenFile, grantFile, refresh)) {
            Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        }
        Files.setPosixFilePermissions(ca, PosixFilePermissions.fromString("rw-r--r--"));
        Result fixed = doctor("--gateway", stack.url(), "--state-dir", tmp.toString(), "--token-file",
                tokenFile.toString(), "--grant-file", grantFile.toString(), "--gateway-ca", ca.toString(),
                "--grant-refresh-token-file", refresh.toString());
        for (String check : List.of("token-file", "grant-file", "gateway-ca", "grant-refresh-token-file")) {
            assertEquals("ok", only(checks(fixed), check).get("status").asText(), fixed::toString);
        }
    }

    /** An ingress started with --no-control has no control.json: --proxy names its proxy for the check. */
    @Test
    void theProxyOfAnIngressWithoutControlApi() throws Exception {
        Path state = tmp.resolve("state");
        RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token", stack.token(),
                "--grant", stack.grant("default", stack.app.port()), "--state-dir", state.toString(), "--no-control");
        try {
            String proxy = running.readyLine().get("proxy").asText();
            Result r = doctor("--gateway", stack.url(), "--state-dir", state.toString(), "--proxy", proxy);
            JsonNode check = only(checks(r), "proxy");
            assertEquals("ok", check.get("status").asText(), r::toString);
            assertTrue(check.get("message").asText().startsWith("proxy " + proxy + " answers like desktop-ingress"),
                    check::toString);
        } finally {
            running.close();
        }
        String closed = "127.0.0.1:" + TestStack.closedPort();
        Result r = doctor("--gateway", stack.url(), "--state-dir", state.toString(), "--proxy", closed);
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(failure(r, "proxy").startsWith("no desktop-ingress proxy at " + closed + ": cannot connect"),
                r::toString);
    }

    @Test
    void clockSkewAgainstTheGateway() throws Exception {
        CommandLine cl;
        Result r;
        try (Captured c = new Captured()) {
            cl = new CommandLine(new IngressMain());
            DoctorCommand doctor = cl.getSubcommands().get("doctor").getCommand();
            doctor.clock = Clock.offset(Clock.systemUTC(), Duration.ofMinutes(3));
            int code = cl.execute("doctor", "--json", "--gateway", stack.url(), "--state-dir", tmp.toString());
            r = IngressCliHarness.result(code, c.out(), c.err());
        }
        String m = failure(r, "clock");
        assertTrue(m.matches("this desktop's clock is 1(79|80|81) s ahead of the gateway's: .*NTP.*"), m);
    }

    @Test
    void everyMisconfigurationHasItsOwnMessage() throws Exception {
        List<String> messages = new ArrayList<>();
        messages.add(failure(doctor("--gateway", "ws://127.0.0.1:" + TestStack.closedPort() + "/tunnel",
                "--state-dir", tmp.toString()), "gateway"));
        messages.add(failure(doctor("--gateway", stack.url().replace("/tunnel", "/x"), "--state-dir", tmp.toString()),
                "gateway"));
        messages.add(failure(doctor("--gateway", stack.url(), "--token-file", file("t1",
                stack.issuer.issueConnectionToken("staging", Duration.ofHours(1))).toString(), "--state-dir",
                tmp.toString()), "token"));
        messages.add(failure(doctor("--gateway", stack.url(), "--token-file", file("t2", new GrantIssuer(
                KeyDirectory.init(tmp.resolve("k2")).signingKey(), Clock.systemUTC()).issueConnectionToken(
                TestStack.ENV, Duration.ofHours(1))).toString(), "--state-dir", tmp.toString()), "token"));
        messages.add(failure(doctor("--gateway", stack.url(), "--token-file", file("t3", stack.token()).toString(),
                "--grant-file", file("g", stack.grant("default", TestStack.closedPort())).toString(), "--state-dir",
                tmp.toString()), "target"));
        messages.add(failure(doctor("--gateway", stack.url(), "--state-dir", tmp.resolve("none").toString()), "proxy"));
        messages.add(failure(doctor("--gateway", stack.url(), "--environment-gateway", "staging=ws://127.0.0.1:"
                + TestStack.closedPort() + "/tunnel", "--environment-token-file", "staging=" + file("t4",
                stack.token()), "--state-dir", tmp.toString()), "environment-gateway"));
        messages.add(failure(doctor("--gateway", stack.url(), "--token-file", file("t5", stack.token()).toString(),
                "--environment-gateway", "staging=" + stack.url(), "--environment-token-file", "staging="
                + tmp.resolve("missing.token"), "--state-dir", tmp.toString()), "environment-token"));
        messages.add(failure(doctor("--gateway", stack.url(), "--token-file", tmp.resolve("missing.token").toString(),
                "--state-dir", tmp.toString()), "token"));
        assertEquals(messages.size(), messages.stream().distinct().count(), messages::toString);
    }
}
