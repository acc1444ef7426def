package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.sampleapp.SampleApp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code session}, {@code grant} and {@code status} against a running {@code run} (control API on by default), a
 * real gateway and a real target: a session created and granted from the command line serves requests; closing
 * it or detaching the grant ends its access; no ingress running is exit 2.
 */
class ControlCommandsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path shared;
    static TestStack stack;

    @TempDir
    Path tmp;

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

    private static HttpResponse<String> get(HttpClient client, String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void sessionsAndGrantsManagedFromTheCommandLineWhileRunning() throws Exception {
        String token = stack.token();
        String grant = stack.grant("web", stack.app.port());
        Path tokenFile = TestStack.secretFile(tmp, "token", token + "\n");
        Path grantFile = TestStack.secretFile(tmp, "grant", grant + "\n");
        Path state = tmp.resolve("state");
        String dir = state.toString();
        // No grant at start: with the control API on, grants can come later.
        RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token-file",
                tokenFile.toString(), "--state-dir", dir);
        List<String> outputs = new ArrayList<>();
        String password;
        try {
            JsonNode ready = running.readyLine();
            assertEquals(0, ready.get("grants").size(), ready::toString);
            String proxy = ready.get("proxy").asText();

            Result status = run("status", "--state-dir", dir);
            assertEquals(0, status.exitCode(), status::toString);
            outputs.add(status.out());
            assertTrue(status.out().contains("proxy      " + proxy), status.out());
            assertTrue(status.out().matches("(?s).*tunnel +(connected|reconnecting) \\(.*"), status.out());
            assertTrue(status.out().contains("default") && status.out().contains("(no grants)"), status.out());

            Result created = run("session", "create", "--id", "web", "--egress", "deny", "--state-dir", dir);
            assertEquals(0, created.exitCode(), created::toString);
            outputs.add(created.out());
            JsonNode session = JSON.readTree(created.out());
            assertEquals("web", session.get("id").asText());
            assertEquals("ptun-web", session.get("username").asText());
            assertEquals("deny", session.get("egress").asText());
            Path credentials = Path.of(session.get("credentialsFile").asText());
            assertTrue(credentials.isAbsolute(), credentials::toString);
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(credentials)));
            password = JSON.readTree(Files.readString(credentials)).get("password").asText();

            HttpClient client = TestStack.proxiedClient(proxy, credentials);
            String url = "http://localhost:" + stack.app.port() + "/hello";
            assertEquals(403, get(client, url).statusCode(), "no grant yet");

            Result added = run("grant", "add", "--session", "web", "--grant-file", grantFile.toString(),
                    "--state-dir", dir);
            assertEquals(0, added.exitCode(), added::toString);
            outputs.add(added.out());
            JsonNode attached = JSON.readTree(added.out());
            assertEquals("localhost:" + stack.app.port(), attached.get("target").asText());
            List<String> authorities = new ArrayList<>();
            attached.get("authorities").forEach(a -> authorities.add(a.asText()));
            assertTrue(authorities.contains("localhost:" + stack.app.port()), authorities::toString);
            assertTrue(authorities.contains("p" + stack.app.port() + ".e1.preview.localhost:" + stack.app.port()),
                    authorities::toString);

            HttpResponse<String> hello = get(client, url);
            assertEquals(200, hello.statusCode(), hello::body);
            assertEquals(SampleApp.HELLO_BODY, hello.body());

            Result listed = run("session", "list", "--state-dir", dir);
            assertEquals(0, listed.exitCode(), listed::toString);
            outputs.add(listed.out());
            assertEquals(2, JSON.readTree(listed.out()).get("sessions").size());

            Result json = run("status", "--json", "--state-dir", dir);
            assertEquals(0, json.exitCode(), json::toString);
            outputs.add(json.out());
            JsonNode st = JSON.readTree(json.out());
            assertEquals(proxy, st.get("proxy").asText());
            assertEquals(2, st.get("sessions").asInt());
            assertTrue(st.get("tunnel").has("state"));
            // The JVM's limits are read off the event loop on the first status request (finding 42).
            assertTrue(st.path("jvm").asText().matches(
                    "max heap \\d+ MiB, max direct memory \\d+ MiB, collector \\S+, compiler .+"), st::toString);

            String grantId = attached.get("grantId").asText();
            Result removed = run("grant", "remove", "--session", "web", "--id", grantId, "--state-dir", dir);
            assertEquals(0, removed.exitCode(), removed::toString);
            assertEquals(grantId, JSON.readTree(removed.out()).get("detached").asText());
            assertEquals(403, get(TestStack.proxiedClient(proxy, credentials), url).statusCode(), "grant detached");

            Result unknown = run("grant", "remove", "--session", "web", "--id", grantId, "--state-dir", dir);
            assertEquals(1, unknown.exitCode(), unknown::toString);
            assertTrue(unknown.cliErrorLine().contains("no_such_grant"), unknown::toString);

            Result closed = run("session", "close", "--id", "web", "--state-dir", dir);
            assertEquals(0, closed.exitCode(), closed::toString);
            assertFalse(Files.exists(credentials), "the credentials file goes with the session");
            Result again = run("session", "close", "--id", "web", "--state-dir", dir);
            assertEquals(1, again.exitCode(), again::toString);
            assertTrue(again.cliErrorLine().contains("no_such_session"), again::toString);

            Result exists = run("session", "create", "--id", "default", "--state-dir", dir);
            assertEquals(1, exists.exitCode(), exists::toString);
            assertTrue(exists.cliErrorLine().contains("session_exists"), exists::toString);
        } finally {
            running.close();
        }
        assertEquals(0, running.awaitExit());
        for (String out : outputs) {
            assertNoSecrets(out, "", token, grant, password);
        }
        assertNoSecrets(running.captured.out(), running.captured.err(), token, grant, password);
    }

    @Test
    void theOldPositionalFormsAreAOneLineUsageErrorThatShowsTheNewForm() {
        String dir = tmp.resolve("nothing-here").toString();
        Result close = run("session", "close", "web", "--state-dir", dir);
        assertTrue(close.usageError().contains("names its object with --id, not as an argument; use: "
                + "desktop-ingress session close --id web"), close::toString);
        Result rotate = run("session", "rotate", "web", "--state-dir", dir);
        assertTrue(rotate.usageError().contains("use: desktop-ingress session rotate --id web"), rotate::toString);
        Result remove = run("grant", "remove", "--session", "web", "Qz0_k", "--state-dir", dir);
        assertTrue(remove.usageError().contains("use: desktop-ingress grant remove --session web --id Qz0_k"),
                remove::toString);
        Result missing = run("session", "close", "--state-dir", dir);
        assertTrue(missing.usageError().contains("Missing required option: '--id'"), missing::toString);
        assertFalse(java.nio.file.Files.exists(java.nio.file.Path.of(dir)), "refused before anything is touched");
    }

    @Test
    void grantInputIsCheckedBeforeAnythingIsSentAndNeverEchoed() throws Exception {
        String dir = tmp.toString();
        String notAGrant = "not-a-grant-but-maybe-a-secret-77";
        Result bad = run("grant", "add", "--session", "s", "--grant", notAGrant, "--state-dir", dir);
        assertTrue(bad.usageError().contains("--grant is not a readable grant"), bad::toString);
        assertNoSecrets(bad.out(), bad.err(), notAGrant);
        Result both = run("grant", "add", "--session", "s", "--grant", "x", "--grant-file", "f", "--state-dir", dir);
        assertEquals(1, both.exitCode(), both::toString);
        Result badSession = run("session", "create", "--id", "a/b", "--state-dir", dir);
        assertTrue(badSession.usageError().contains("--id must be"), badSession::toString);
        Result badEgress = run("session", "create", "--egress", "everywhere", "--state-dir", dir);
        assertTrue(badEgress.usageError().contains("--egress must be deny or direct"), badEgress::toString);
    }

    @Test
    void noRunningIngressIsExit2WithWhatToDo() throws Exception {
        String dir = tmp.resolve("nothing-here").toString();
        for (String[] args : new String[][] {{"status"}, {"status", "--json"}, {"session", "list"},
                {"session", "create"}, {"session", "close", "--id", "x"}, {"session", "rotate", "--id", "x"},
                {"grant", "remove", "--session", "s", "--id", "g"},
                // Ids may start with '-' (one grant id in 64 does): parsed as the option's value, also when the
                // next letter is that of a short option (-h, -V: picocli would otherwise read a cluster).
                {"session", "close", "--id", "-x"}, {"grant", "remove", "--session", "s", "--id", "-Qz0_k"},
                {"grant", "remove", "--session", "s", "--id", "-hQz0_k"},
                {"grant", "remove", "--session", "s", "--id", "-VQz0_k"}}) {
            String[] all = java.util.Arrays.copyOf(args, args.length + 2);
            all[args.length] = "--state-dir";
            all[args.length + 1] = dir;
            Result r = run(all);
            assertEquals(2, r.exitCode(), r::toString);
            assertEquals("", r.out(), r::toString);
            assertTrue(r.cliErrorLine().contains("no desktop-ingress is running with state directory"), r::toString);
        }

        // A control.json left behind by an ingress that is gone: still 2, and says it is stale.
        Path stale = tmp.resolve("stale");
        TestStack.secretFile(stale, "control.json", "{\"url\":\"http://127.0.0.1:" + TestStack.closedPort()
                + "\",\"token\":\"t0k3n-that-must-not-show\",\"pid\":2147483000}\n");
        Result r = run("status", "--state-dir", stale.toString());
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.cliErrorLine().contains("not running any more"), r::toString);
        assertFalse(r.err().contains("t0k3n-that-must-not-show"));

        // A control.json whose URL is not loopback: the token is never sent there.
        Path remote = tmp.resolve("remote");
        TestStack.secretFile(remote, "control.json", "{\"url\":\"http://192.0.2.1:80\",\"token\":\"abc\"}\n");
        Result refused = run("status", "--state-dir", remote.toString());
        assertEquals(3, refused.exitCode(), refused::toString);
    }

    @Test
    void aWrongControlTokenIsRefusedWithExit3() throws Exception {
        String token = stack.token();
        Path dir = tmp.resolve("state");
        RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token", token,
                "--state-dir", dir.toString());
        try {
            running.readyLine();
            JsonNode control = JSON.readTree(Files.readString(dir.resolve("control.json")));
            Path other = tmp.resolve("other");
            TestStack.secretFile(other, "control.json", "{\"url\":\"" + control.get("url").asText()
                    + "\",\"token\":\"wrong-token-value\"}\n");
            Result r = run("status", "--state-dir", other.toString());
            assertEquals(3, r.exitCode(), r::toString);
            assertTrue(r.cliErrorLine().contains("token_refused"), r::toString);
            assertNoSecrets(r.out(), r.err(), control.get("token").asText());
        } finally {
            running.close();
        }
    }

    @Test
    void noControlMeansNoStateFileAndNoStatus() throws Exception {
        String token = stack.token();
        String grant = stack.grant("default", stack.app.port());
        Path dir = tmp.resolve("state");
        RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token", token,
                "--grant", grant, "--no-control", "--state-dir", dir.toString());
        try {
            JsonNode ready = running.readyLine();
            assertFalse(ready.has("controlStateFile"), ready::toString);
            assertFalse(Files.exists(dir.resolve("control.json")));
            assertEquals(2, run("status", "--state-dir", dir.toString()).exitCode());
        } finally {
            running.close();
        }
        Result nonLoopback = run("run", "--gateway", stack.url(), "--token", token, "--state-dir", dir.toString(),
                "--control-listen", "0.0.0.0:0");
        assertTrue(nonLoopback.usageError().contains("--control-listen must be a loopback address"),
                nonLoopback::toString);
    }
}
