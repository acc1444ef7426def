package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.testing.Await;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.handler.ssl.SslContextBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.Authenticator;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.PasswordAuthentication;
import java.net.ProxySelector;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static dev.previewtunnel.cli.InProcessCli.logMessages;
import static dev.previewtunnel.cli.InProcessCli.concat;
import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code desktop-ingress run} against a real in-process env-gateway and a real target (the sample app): the
 * ready line, the credentials file, a request through the proxy, shutdown, and every refusal. No output may
 * ever contain the token, a grant or the proxy password.
 */
class RunCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ENV = "e1";

    @TempDir
    static Path shared;
    static GrantIssuer issuer;
    static GatewayServer gateway;
    static SampleApp app;
    static String token;
    static String grant;

    @TempDir
    Path tmp;

    @BeforeAll
    static void startGatewayAndTarget() throws Exception {
        KeyDirectory keys = KeyDirectory.init(shared.resolve("keys"));
        issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        GrantVerifier verifier = new GrantVerifier(keys.verificationKeys(), Clock.systemUTC(),
                VerifierPolicy.defaults());
        gateway = GatewayServer.start(gatewayConfig(), verifier, null, new SimpleMeterRegistry());
        app = SampleApp.start("127.0.0.1", 0);
        token = issuer.issueConnectionToken(ENV, Duration.ofHours(1));
        grant = issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "localhost", app.port()), Duration.ofMinutes(10));
    }

    /** A loopback gateway for {@link #ENV} that does not keep the tests waiting for a drain when closed. */
    private static GatewayConfig gatewayConfig() {
        return GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", 0))
                .withDrainTimeout(Duration.ofMillis(200));
    }

    @AfterAll
    static void stopGatewayAndTarget() {
        if (app != null) {
            app.close();
        }
        if (gateway != null) {
            gateway.close();
        }
    }

    private Path secretFile(String name, String content) throws Exception {
        Path file = tmp.resolve(name);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        return Files.writeString(file, content);
    }

    private static HttpClient client(String proxy, String user, String password) {
        int colon = proxy.lastIndexOf(':');
        InetSocketAddress address = new InetSocketAddress(proxy.substring(0, colon),
                Integer.parseInt(proxy.substring(colon + 1)));
        HttpClient.Builder b = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .proxy(ProxySelector.of(address))
                .connectTimeout(Duration.ofSeconds(10));
        if (user != null) {
            b.authenticator(new Authenticator() {
                @Override
                protected PasswordAuthentication getPasswordAuthentication() {
                    return getRequestorType() == RequestorType.PROXY
                            ? new PasswordAuthentication(user, password.toCharArray()) : null;
                }
            });
        }
        return b.build();
    }

    private static HttpResponse<String> get(HttpClient client, String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static int closedPort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    @Test
    void readyLineCredentialsFileAndARequestThroughTheGateway() throws Exception {
        Path tokenFile = secretFile("token", token + "\n");
        Path grantFile = secretFile("grants", "# grants for the preview\n\n" + grant + "\n");
        Path stateDir = tmp.resolve("state").resolve("preview-tunnel");
        String gatewayUrl = gateway.url(false);

        RunningIngress running = RunningIngress.start("run", "--gateway", gatewayUrl, "--token-file",
                tokenFile.toString(), "--grant-file", grantFile.toString(), "--state-dir", stateDir.toString(),
                "--session-id", "s1");
        Path credentials = stateDir.resolve("session-s1.credentials.json");
        String password;
        String proxy;
        try {
            assertNotNull(running.command.ingress(), running.captured::err);
            JsonNode ready = running.readyLine();
            int port = running.command.ingress().proxyAddress().getPort();
            proxy = "127.0.0.1:" + port;
            assertEquals("ready", ready.get("event").asText());
            assertEquals(proxy, ready.get("proxy").asText());
            assertEquals(credentials.toAbsolutePath().toString(), ready.get("credentialsFile").asText());
            assertEquals("s1", ready.get("session").asText());
            assertEquals(gatewayUrl, ready.get("gateway").asText());
            assertEquals(List.of("localhost:" + app.port()), strings(ready.get("grants")));
            assertEquals(IngressVersionProvider.projectVersion(), ready.get("version").asText());
            assertEquals("ptun.v1", ready.get("protocol").asText());
            Path controlFile = stateDir.resolve("control.json").toAbsolutePath();
            assertEquals(controlFile.toString(), ready.get("controlStateFile").asText(), "the control API is on by default");
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(controlFile)));
            assertEquals(9, ready.size(), ready::toString);

            // The credential: owner-only file in an owner-only directory, exactly username and password.
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(credentials)));
            assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(stateDir)));
            JsonNode credential = JSON.readTree(Files.readString(credentials));
            assertEquals(List.of("username", "password"), fieldNames(credential));
            assertEquals("ptun-s1", credential.get("username").asText());
            password = credential.get("password").asText();
            assertTrue(password.length() >= 16, "a random password");

            // A real request through proxy, tunnel and gateway to the target.
            HttpResponse<String> hello = get(client(proxy, "ptun-s1", password),
                    "http://localhost:" + app.port() + "/hello");
            assertEquals(200, hello.statusCode(), hello::body);
            assertEquals(SampleApp.HELLO_BODY, hello.body());
            assertEquals(407, get(client(proxy, null, null), "http://localhost:" + app.port() + "/hello")
                    .statusCode(), "the proxy needs the session's credential");

            List<String> messages = logMessages(running.captured.err());
            assertTrue(messages.stream().anyMatch(m -> m.startsWith("INFO ")
                            && m.contains("chromium --proxy-server=http://" + proxy
                                    + " --proxy-bypass-list='<-loopback>'")
                            && m.contains(credentials.toAbsolutePath().toString())),
                    () -> String.join("\n", messages));
        } finally {
            running.close();
        }
        Result r = running.result();
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.outLines().size(), () -> "nothing but the ready line on stdout: " + r);
        // The credential outlives the process (a session ends only with 'session close'); still owner-only.
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(credentials)),
                "credentials file kept, owner-only, across a clean shutdown");
        assertFalse(Files.exists(stateDir.resolve("control.json")), "control state file deleted on clean shutdown");
        assertTrue(logMessages(r.err()).stream().anyMatch(m -> m.equals("INFO ingress stopped")), r::toString);
        assertNoSecrets(r.out(), r.err(), token, grant, password);
    }

    @Test
    void aSecondRunOnTheSameStateDirectoryRefusesInOneLineAndTouchesNothing() throws Exception {
        Path stateDir = tmp.resolve("state");
        String[] args = {"run", "--gateway", gateway.url(false), "--token", token, "--pool", "1",
                "--state-dir", stateDir.toString()};
        RunningIngress first = RunningIngress.start(args);
        try {
            first.readyLine();
            Path control = stateDir.resolve("control.json");
            Path credentials = stateDir.resolve("session-default.credentials.json");
            String controlBefore = Files.readString(control);
            String credentialsBefore = Files.readString(credentials);
            var modified = Files.getLastModifiedTime(credentials);

            Result second = run(args);
            assertEquals(3, second.exitCode(), second::toString);
            assertEquals("", second.out(), second::toString);
            assertEquals("desktop-ingress: state directory " + stateDir.toAbsolutePath() + " is in use by another "
                    + "desktop-ingress run (pid " + ProcessHandle.current().pid() + "); stop it, or give this one "
                    + "another --state-dir", second.cliErrorLine());
            assertEquals(controlBefore, Files.readString(control), "the first one's control file is untouched");
            assertEquals(credentialsBefore, Files.readString(credentials));
            assertEquals(modified, Files.getLastModifiedTime(credentials), "not even rewritten");
            assertNoSecrets(second.out(), second.err(), token);
        } finally {
            first.close();
        }
        assertEquals(0, first.result().exitCode(), () -> first.captured.err());
        // Stopped: the lock went with it, and the next run on the same directory starts.
        RunningIngress next = RunningIngress.start(args);
        try {
            assertEquals("default", next.readyLine().get("session").asText());
        } finally {
            next.close();
        }
    }

    @Test
    void inlineTokenAndRepeatedGrantsWithTheDefaultSessionId() throws Exception {
        int otherPort = closedPort();
        String other = issuer.issueGrant(GrantSpec.tcp(ENV, "default", "127.0.0.1", otherPort), Duration.ofMinutes(5));
        Path stateDir = tmp.resolve("state");
        RunningIngress running = RunningIngress.start("run", "--gateway", gateway.url(false), "--token", token,
                "--grant", grant, "--grant", other, "--listen", "127.0.0.1:0", "--pool", "1",
                "--state-dir", stateDir.toString());
        String password;
        try {
            JsonNode ready = running.readyLine();
            assertEquals("default", ready.get("session").asText());
            assertEquals(List.of("localhost:" + app.port(), "127.0.0.1:" + otherPort), strings(ready.get("grants")));
            Path credentials = stateDir.resolve("session-default.credentials.json");
            assertEquals(credentials.toAbsolutePath().toString(), ready.get("credentialsFile").asText());
            JsonNode credential = JSON.readTree(Files.readString(credentials));
            assertEquals("ptun-default", credential.get("username").asText());
            password = credential.get("password").asText();
            HttpResponse<String> hello = get(client(ready.get("proxy").asText(), "ptun-default", password),
                    "http://127.0.0.1:" + app.port() + "/hello");
            assertEquals(200, hello.statusCode(), "127.0.0.1:P reaches a grant for localhost:P");
        } finally {
            running.close();
        }
        Result r = running.result();
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(Files.exists(stateDir.resolve("session-default.credentials.json")), "kept for the next run");
        assertNoSecrets(r.out(), r.err(), token, grant, other, password);
    }

    @Test
    void aGatewayThatIsDownDoesNotStopStartupItIsWarnedAboutAndAnswered502() throws Exception {
        String url = "ws://127.0.0.1:" + closedPort() + "/tunnel";
        RunningIngress running = RunningIngress.start("run", "--gateway", url, "--token", token, "--grant", grant,
                "--state-dir", tmp.toString());
        String password;
        try {
            JsonNode ready = running.readyLine();
            assertEquals(url, ready.get("gateway").asText());
            Await.until("a warning about the first connection", Duration.ofSeconds(20),
                    () -> logMessages(running.captured.err()).stream()
                            .anyMatch(m -> m.startsWith("WARN first connection to the gateway")));
            password = JSON.readTree(Files.readString(Path.of(ready.get("credentialsFile").asText())))
                    .get("password").asText();
            HttpResponse<String> page = get(client(ready.get("proxy").asText(), "ptun-default", password),
                    "http://localhost:" + app.port() + "/hello");
            assertEquals(502, page.statusCode(), page::body);
        } finally {
            running.close();
        }
        Result r = running.result();
        assertEquals(0, r.exitCode(), r::toString);
        assertNoSecrets(r.out(), r.err(), token, grant, password);
    }

    @Test
    void wssGatewayTrustedThroughGatewayCa() throws Exception {
        Path cert = TestTls.writeCert(tmp);
        Path key = TestTls.writeKey(tmp);
        KeyDirectory keys = KeyDirectory.init(tmp.resolve("keys"));
        GrantIssuer tlsIssuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        GatewayServer tlsGateway = GatewayServer.start(gatewayConfig(),
                new GrantVerifier(keys.verificationKeys(), Clock.systemUTC(), VerifierPolicy.defaults()),
                SslContextBuilder.forServer(cert.toFile(), key.toFile()).build(), new SimpleMeterRegistry());
        String tlsToken = tlsIssuer.issueConnectionToken(ENV, Duration.ofMinutes(10));
        String tlsGrant = tlsIssuer.issueGrant(GrantSpec.tcp(ENV, "default", "localhost", app.port()),
                Duration.ofMinutes(10));
        List<String> passwords = new ArrayList<>();
        try {
            String url = tlsGateway.url(true);
            assertTrue(url.startsWith("wss://127.0.0.1:"), url);
            // Trusted through --gateway-ca: the request goes through.
            RunningIngress trusted = RunningIngress.start("run", "--gateway", url, "--gateway-ca", cert.toString(),
                    "--token", tlsToken, "--grant", tlsGrant, "--state-dir", tmp.resolve("a").toString());
            try {
                JsonNode ready = trusted.readyLine();
                String password = JSON.readTree(Files.readString(Path.of(ready.get("credentialsFile").asText())))
                        .get("password").asText();
                passwords.add(password);
                HttpResponse<String> hello = get(client(ready.get("proxy").asText(), "ptun-default", password),
                        "http://localhost:" + app.port() + "/hello");
                assertEquals(200, hello.statusCode(), hello::body);
            } finally {
                trusted.close();
            }
            assertEquals(0, trusted.awaitExit());
            assertNoSecrets(trusted.captured.out(), trusted.captured.err(), tlsToken, tlsGrant, passwords.get(0));

            // The JDK's default trust store does not know the certificate: ready anyway, warned, 502.
            RunningIngress untrusted = RunningIngress.start("run", "--gateway", url, "--token", tlsToken,
                    "--grant", tlsGrant, "--state-dir", tmp.resolve("b").toString());
            try {
                untrusted.readyLine();
                Await.until("a warning about the first connection", Duration.ofSeconds(20),
                        () -> logMessages(untrusted.captured.err()).stream()
                                .anyMatch(m -> m.startsWith("WARN first connection to the gateway")));
            } finally {
                untrusted.close();
            }
            assertEquals(0, untrusted.awaitExit());
            assertNoSecrets(untrusted.captured.out(), untrusted.captured.err(), tlsToken, tlsGrant);
        } finally {
            tlsGateway.close();
        }
    }

    @Test
    void aValueThatIsNotAGrantIsRefusedWithoutEchoingIt() throws Exception {
        String notAGrant = "not-a-grant-but-maybe-a-secret-3f9a";
        String[] base = {"run", "--gateway", gateway.url(false), "--token", token, "--state-dir", tmp.toString()};
        Result inline = run(concat(base, "--grant", grant, "--grant", notAGrant));
        assertTrue(inline.usageError().contains("--grant #2 is not a readable grant"), inline::toString);
        assertNoSecrets(inline.out(), inline.err(), notAGrant, token, grant);

        // A connection token is a JWT too, but no grant.
        Result jwt = run(concat(base, "--grant", token));
        assertTrue(jwt.usageError().contains("--grant #1 is not a readable grant"), jwt::toString);
        assertNoSecrets(jwt.out(), jwt.err(), token);

        Path file = secretFile("grants", grant + "\n" + notAGrant + "\n");
        Result fromFile = run(concat(base, "--grant-file", file.toString()));
        assertTrue(fromFile.usageError().contains("line 2 of --grant-file " + file + " is not a readable grant"),
                fromFile::toString);
        assertNoSecrets(fromFile.out(), fromFile.err(), notAGrant, grant);

        Result equalsForm = run(concat(base, "--grant=" + notAGrant));
        equalsForm.usageError();
        assertNoSecrets(equalsForm.out(), equalsForm.err(), notAGrant);

        assertFalse(Files.exists(tmp.resolve("session-default.credentials.json")), "nothing written");
    }

    @Test
    void atLeastOneGrantIsRequiredWithoutTheControlApi() throws Exception {
        String[] base = {"run", "--gateway", gateway.url(false), "--token", token, "--state-dir", tmp.toString(),
                "--no-control"};
        assertTrue(run(base).usageError().contains("at least one grant is required with --no-control"));
        Path onlyComments = secretFile("grants", "# nothing yet\n\n");
        Result r = run(concat(base, "--grant-file", onlyComments.toString()));
        assertTrue(r.usageError().contains("at least one grant is required"), r::toString);
        assertTrue(run(concat(base, "--grant-file", tmp.resolve("missing").toString())).refusal()
                .contains("does not exist"));
    }

    @Test
    void theListenAddressMustBeLoopback() {
        for (String listen : List.of("0.0.0.0:0", "10.1.2.3:0", "[::]:0")) {
            Result r = run("run", "--gateway", gateway.url(false), "--token", token, "--grant", grant,
                    "--state-dir", tmp.toString(), "--listen", listen);
            String line = r.usageError();
            assertTrue(line.contains("--listen must be a loopback address (127.0.0.0/8 or [::1])"), line);
            assertTrue(line.contains("must not be reachable from other machines"), line);
            assertNoSecrets(r.out(), r.err(), token, grant);
        }
        Result malformed = run("run", "--gateway", gateway.url(false), "--token", token, "--grant", grant,
                "--listen", "::1:0");
        assertTrue(malformed.usageError().contains("--listen must be HOST:PORT (e.g. 127.0.0.1:0 or [::1]:0)"));
    }

    @Test
    void exactlyOneOfTokenAndTokenFile() throws Exception {
        Path tokenFile = secretFile("token", token);
        String[] base = {"run", "--gateway", gateway.url(false), "--grant", grant, "--state-dir", tmp.toString()};
        Result both = run(concat(base, "--token", token, "--token-file", tokenFile.toString()));
        assertTrue(both.usageError().contains("either --token-file or --token, not both"), both::toString);
        assertNoSecrets(both.out(), both.err(), token, grant);

        Result neither = run(base);
        assertTrue(neither.usageError().contains("a connection token is required: --token-file FILE (recommended"),
                neither::toString);

        Result twoLines = run(concat(base, "--token-file", secretFile("two", token + "\n" + token + "\n").toString()));
        assertTrue(twoLines.usageError().contains("must hold the token on one line"), twoLines::toString);
        assertNoSecrets(twoLines.out(), twoLines.err(), token);

        String spaced = "token with spaces in it";
        Result bad = run(concat(base, "--token", spaced));
        assertTrue(bad.usageError().contains("not a connection token"), bad::toString);
        assertFalse(bad.err().contains(spaced));

        assertTrue(run(concat(base, "--token-file", tmp.resolve("missing").toString())).refusal()
                .contains("--token-file file"));
    }

    /**
     * A missing token or grant file, or one group/others may read, is refused with exit 3 (ExitCodes.REFUSED,
     * docs/operations.md): before issue 20 a missing one exited 1 and a loose one was only warned about.
     */
    @Test
    void missingOrLooseSecretFilesAreRefused() throws Exception {
        String[] base = {"run", "--gateway", gateway.url(false), "--state-dir", tmp.toString()};
        Path missing = tmp.resolve("no-token");
        assertEquals("desktop-ingress: --token-file file " + missing + " does not exist or is not a file",
                run(concat(base, "--grant", grant, "--token-file", missing.toString())).refusal());
        Path looseToken = secretFile("loose-token", token);
        Files.setPosixFilePermissions(looseToken, PosixFilePermissions.fromString("rw-r--r--"));
        Result r = run(concat(base, "--grant", grant, "--token-file", looseToken.toString()));
        assertEquals("desktop-ingress: --token-file file " + looseToken + " is accessible by group/others "
                + "(rw-r--r--); it holds secrets: chmod 600 " + looseToken, r.refusal());
        assertNoSecrets(r.out(), r.err(), token, grant);
        Path looseGrant = secretFile("loose-grant", grant);
        Files.setPosixFilePermissions(looseGrant, PosixFilePermissions.fromString("rw-r-----"));
        Result g = run(concat(base, "--token", token, "--grant-file", looseGrant.toString()));
        assertTrue(g.refusal().contains("--grant-file file " + looseGrant + " is accessible by group/others"), g::toString);
        assertNoSecrets(g.out(), g.err(), token, grant);
    }

    @Test
    void gatewayUrlsMustBeWebSocketsWithoutSecretsInThem() {
        String[][] cases = {
                {"ws://127.0.0.1:1/tunnel?token=sekrit-in-query", "sekrit-in-query"},
                {"ws://user:sekrit-password@127.0.0.1:1/tunnel", "sekrit-password"},
                {"wss://127.0.0.1:1/tunnel#sekrit-fragment", "sekrit-fragment"},
                {"http://127.0.0.1:1/tunnel", null},
                {"ws:///tunnel", null},
                {"ws://bad host/tunnel", null},
                {"127.0.0.1:7443", null},
        };
        for (String[] c : cases) {
            Result r = run("run", "--gateway", c[0], "--token", token, "--grant", grant, "--state-dir",
                    tmp.toString());
            String line = r.usageError();
            assertTrue(line.startsWith("desktop-ingress: --gateway "), line);
            if (c[1] != null) {
                assertFalse(r.err().contains(c[1]), line);
                assertTrue(line.contains("never in a URL"), line);
            }
            assertNoSecrets(r.out(), r.err(), token, grant);
        }
        Result ca = run("run", "--gateway", "ws://127.0.0.1:1/tunnel", "--gateway-ca", "ca.pem", "--token", token,
                "--grant", grant);
        assertTrue(ca.usageError().contains("--gateway-ca applies to wss:// gateways only"));
        Result badCa = run("run", "--gateway", "wss://127.0.0.1:1/tunnel", "--gateway-ca",
                tmp.resolve("missing.pem").toString(), "--token", token, "--grant", grant);
        assertTrue(badCa.refusal().contains("--gateway-ca file"));
    }

    @Test
    void otherBadArgumentsAreOneLineUsageErrors() {
        String[] base = {"run", "--gateway", gateway.url(false), "--token", token, "--grant", grant,
                "--state-dir", tmp.toString()};
        assertTrue(run(concat(base, "--pool", "0")).usageError().contains("--pool must be 1 to 64"));
        assertTrue(run(concat(base, "--pool", "65")).usageError().contains("--pool must be 1 to 64"));
        assertTrue(run(concat(base, "--io-threads", "0")).usageError().contains("--io-threads must be 1 to 16, got 0"));
        assertTrue(run(concat(base, "--io-threads", "17")).usageError().contains("--io-threads must be 1 to 16"));
        assertTrue(run(concat(base, "--session-id", "a/b")).usageError().contains("--session-id must be"));
        // A grant pasted without its option is quoted by picocli's own message: it must be redacted.
        Result stray = run(concat(base, grant));
        assertTrue(stray.usageError().contains("<redacted>"), stray::toString);
        assertNoSecrets(stray.out(), stray.err(), token, grant);
    }

    @Test
    void aListenPortInUseExitsWith2() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            Result r = run("run", "--gateway", gateway.url(false), "--token", token, "--grant", grant,
                    "--state-dir", tmp.toString(), "--listen", "127.0.0.1:" + taken.getLocalPort());
            assertEquals(2, r.exitCode(), r::toString);
            assertEquals("", r.out());
            assertTrue(r.err().contains("desktop-ingress: cannot listen on 127.0.0.1:" + taken.getLocalPort()),
                    r::toString);
            assertFalse(Files.exists(tmp.resolve("session-default.credentials.json")));
            assertNoSecrets(r.out(), r.err(), token, grant);
        }
    }

    @Test
    void aStopBeforeReadyIsNotNeededToReleaseWaiters() throws Exception {
        // A failed start releases awaitStarted and leaves no ingress behind.
        RunningIngress failed = RunningIngress.start("run", "--gateway", "http://x/", "--token", token,
                "--grant", grant);
        Result r = failed.result();
        failed.close();
        assertEquals(1, r.exitCode(), r::toString);
        assertNull(failed.command.ingress());
    }

    private static List<String> strings(JsonNode array) {
        List<String> list = new ArrayList<>();
        array.forEach(n -> list.add(n.asText()));
        return list;
    }

    private static List<String> fieldNames(JsonNode node) {
        List<String> names = new ArrayList<>();
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            names.add(it.next());
        }
        return names;
    }
}
