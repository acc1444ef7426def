package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
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
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 17 item 3: a session's credential and the proxy port are stable across ingress restarts (same state
 * directory), sessions created through the control API come back with their grants, and only {@code session
 * rotate} changes a credential (the old one then gets 407).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class SessionsSurviveRestartTest {
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

    /** The answer's status; 407 when the client gave up answering the proxy's challenges with its credential. */
    private static int status(HttpClient client, String url) throws Exception {
        try {
            return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode();
        } catch (java.io.IOException e) {
            if (String.valueOf(e.getMessage()).contains("too many authentication attempts")) {
                return 407; // the JDK client retries a 407 with the same credential, then fails like this
            }
            throw e;
        }
    }

    private static String password(Path credentials) throws Exception {
        return JSON.readTree(Files.readString(credentials)).get("password").asText();
    }

    @Test
    void credentialsPortAndControlCreatedSessionsSurviveARestartUntilRotatedOrClosed() throws Exception {
        String token = stack.token();
        String grant = stack.grant("default", stack.app.port());
        String webGrant = stack.grant("web", stack.app.port());
        Path tokenFile = TestStack.secretFile(tmp, "token", token + "\n");
        Path grantFile = TestStack.secretFile(tmp, "grant", grant + "\n");
        Path webGrantFile = TestStack.secretFile(tmp, "web-grant", webGrant + "\n");
        String dir = tmp.resolve("state").toString();
        String[] args = {"run", "--gateway", stack.url(), "--token-file", tokenFile.toString(), "--grant-file",
                grantFile.toString(), "--state-dir", dir, "--pool", "1"};
        String url = "http://localhost:" + stack.app.port() + "/hello";
        List<String> outputs = new ArrayList<>();

        // First run: the default session, and a session "web" created and granted through the control API.
        RunningIngress first = RunningIngress.start(args);
        String proxy;
        Path defaultCredentials;
        Path webCredentials;
        String defaultPassword;
        String webPassword;
        try {
            JsonNode ready = first.readyLine();
            proxy = ready.get("proxy").asText();
            defaultCredentials = Path.of(ready.get("credentialsFile").asText());
            defaultPassword = password(defaultCredentials);
            Result created = run("session", "create", "--id", "web", "--state-dir", dir);
            assertEquals(0, created.exitCode(), created::toString);
            webCredentials = Path.of(JSON.readTree(created.out()).get("credentialsFile").asText());
            webPassword = password(webCredentials);
            Result added = run("grant", "add", "--session", "web", "--grant-file", webGrantFile.toString(),
                    "--state-dir", dir);
            assertEquals(0, added.exitCode(), added::toString);
            outputs.add(created.out() + added.out());
            assertEquals(200, status(TestStack.proxiedClient(proxy, defaultCredentials), url));
            assertEquals(200, status(TestStack.proxiedClient(proxy, webCredentials), url));
        } finally {
            first.close();
        }
        assertEquals(0, first.awaitExit());
        for (Path kept : List.of(defaultCredentials, webCredentials, Path.of(dir, "sessions.json"))) {
            assertTrue(Files.exists(kept), kept + " is kept across a stop");
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(kept)), kept::toString);
        }

        // Second run, same state directory, same flags (--listen defaults to port 0): same port, same
        // credentials, the control-created session back with its grant; browsers configured before keep working.
        RunningIngress second = RunningIngress.start(args);
        try {
            JsonNode ready = second.readyLine();
            assertEquals(proxy, ready.get("proxy").asText(), "the proxy port is stable across a restart");
            assertEquals(defaultPassword, password(defaultCredentials), "the credential is stable across a restart");
            assertEquals(webPassword, password(webCredentials));
            assertEquals(200, status(TestStack.proxiedClient(proxy, defaultCredentials), url));
            assertEquals(200, status(TestStack.proxiedClient(proxy, webCredentials), url),
                    "the control-created session and its grant survived the restart");
            Result listed = run("session", "list", "--state-dir", dir);
            assertEquals(0, listed.exitCode(), listed::toString);
            outputs.add(listed.out());
            assertEquals(2, JSON.readTree(listed.out()).get("sessions").size(), listed::out);

            // Rotation, only when asked: a new password in the same file; the old one is refused, and a tunnel
            // opened with it is closed at once.
            Path oldCopy = TestStack.secretFile(tmp, "old-web", Files.readString(webCredentials));
            try (java.net.Socket tunnel = new java.net.Socket()) {
                tunnel.setSoTimeout(20_000);
                tunnel.connect(IngressCliHarness.proxyAddress(ready));
                String target = "localhost:" + stack.app.port();
                String auth = "Proxy-Authorization: Basic " + java.util.Base64.getEncoder().encodeToString(
                        ("ptun-web:" + webPassword).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                tunnel.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n" + auth
                        + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                assertTrue(IngressCliHarness.readHead(tunnel.getInputStream()).startsWith("HTTP/1.1 200"));
                Result rotated = run("session", "rotate", "--id", "web", "--state-dir", dir);
                assertEquals(0, rotated.exitCode(), rotated::toString);
                outputs.add(rotated.out());
                assertEquals("web", JSON.readTree(rotated.out()).get("rotated").asText());
                // This tunnel, and the keep-alive connection the HTTP client above still holds.
                assertTrue(JSON.readTree(rotated.out()).get("closedConnections").asInt() >= 1, rotated::out);
                int end;
                try {
                    end = tunnel.getInputStream().read();
                } catch (java.net.SocketTimeoutException stillOpen) {
                    end = -2; // not closed within the socket timeout
                } catch (java.io.IOException reset) {
                    end = -1;
                }
                assertEquals(-1, end, "the tunnel opened with the old password is closed by the rotation");
            }
            String newPassword = password(webCredentials);
            assertNotEquals(webPassword, newPassword, "rotate gives a new password");
            assertEquals(407, status(TestStack.proxiedClient(proxy, oldCopy), url), "the old password is refused");
            assertEquals(200, status(TestStack.proxiedClient(proxy, webCredentials), url));

            Result closed = run("session", "close", "--id", "web", "--state-dir", dir);
            assertEquals(0, closed.exitCode(), closed::toString);
            assertFalse(Files.exists(webCredentials), "closing ends the session for good");
            webPassword = webPassword + "|" + newPassword;
        } finally {
            second.close();
        }
        assertEquals(0, second.awaitExit());

        // Third run, with another grant file: a closed session stays closed, and the first session's grants are
        // the flags' (the grant dropped from the file is not brought back from sessions.json).
        int otherPort = TestStack.closedPort();
        String other = stack.grant("default", otherPort);
        Path otherFile = TestStack.secretFile(tmp, "other-grant", other + "\n");
        String[] otherArgs = args.clone();
        otherArgs[6] = otherFile.toString();
        RunningIngress third = RunningIngress.start(otherArgs);
        try {
            JsonNode ready = third.readyLine();
            assertEquals("[\"localhost:" + otherPort + "\"]", ready.get("grants").toString());
            Result listed = run("session", "list", "--state-dir", dir);
            outputs.add(listed.out());
            JsonNode sessions = JSON.readTree(listed.out()).get("sessions");
            assertEquals(1, sessions.size(), listed::out);
            assertEquals("default", sessions.get(0).get("id").asText());
            assertEquals(1, sessions.get(0).get("grants").size(), listed::out);
            assertEquals("localhost:" + otherPort, sessions.get(0).get("grants").get(0).get("target").asText());
        } finally {
            third.close();
        }
        assertEquals(0, third.awaitExit());
        for (String out : outputs) {
            assertNoSecrets(out, "", token, grant, webGrant, defaultPassword, other);
            for (String p : webPassword.split("\\|")) {
                assertNoSecrets(out, "", p);
            }
        }
        for (RunningIngress r : List.of(first, second, third)) {
            assertNoSecrets(r.captured.out(), r.captured.err(), token, grant, webGrant, defaultPassword);
        }
    }
}
