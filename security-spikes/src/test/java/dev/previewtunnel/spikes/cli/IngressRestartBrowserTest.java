package dev.previewtunnel.spikes.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.browser.Browser;
import dev.previewtunnel.spikes.browser.Page;
import dev.previewtunnel.spikes.lab.Processes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 17 item 3 with the real jars and a real Chromium: a page opened through {@code desktop-ingress run} keeps
 * working after the ingress is stopped (SIGTERM) and started again with the same state directory. The browser
 * keeps the proxy port and the one credential it was given (its DevTools auth handler knows no other), so a
 * new port or a new password would fail its next request. A session created through the control API comes back
 * with the restart too.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class IngressRestartBrowserTest {
    private static final Duration CLI = Duration.ofSeconds(60);
    private static final ObjectMapper JSON = new ObjectMapper();

    @AfterAll
    static void cleanUp() throws Exception {
        CliProcess.deleteStateHome();
    }

    @Test
    void anOpenChromiumPageKeepsWorkingAcrossAnIngressRestart() throws Exception {
        Processes.require(Browser.CHROMIUM, "apt-get install chromium");
        Path dir = Files.createTempDirectory("ptun-restart");
        Path state = dir.resolve("state");
        Path profile = dir.resolve("profile");
        List<AutoCloseable> open = new ArrayList<>();
        try (SampleApp app = SampleApp.start("127.0.0.1", 0)) {
            Path keys = dir.resolve("keys");
            assertEquals(0, CliProcess.run(CLI, "env-gateway", "keys", "init", "--dir", keys.toString())
                    .process.exitValue());
            Path token = secret(dir, "token", CliProcess.run(CLI, "env-gateway", "token", "issue", "--keys",
                    keys.toString(), "--env", "e").stdout().trim());
            Path grant = secret(dir, "grant", grant(keys, "default", app.port()));
            Path webGrant = secret(dir, "web-grant", grant(keys, "web", app.port()));
            CliProcess gateway = CliProcess.start("env-gateway", "serve", "--keys", keys.toString(), "--env", "e",
                    "--listen", "127.0.0.1:0");
            open.add(gateway);
            String url = gateway.awaitReady(CLI).get("url").asText();
            String[] run = {"run", "--gateway", url, "--token-file", token.toString(), "--grant-file",
                    grant.toString(), "--state-dir", state.toString(), "--pool", "1"};

            CliProcess ingress = CliProcess.start("desktop-ingress", run);
            open.add(ingress);
            JsonNode ready = ingress.awaitReady(CLI);
            String proxy = ready.get("proxy").asText();
            JsonNode credential = JSON.readTree(Path.of(ready.get("credentialsFile").asText()).toFile());
            CliProcess created = CliProcess.run(CLI, "desktop-ingress", "session", "create", "--id", "web",
                    "--state-dir", state.toString());
            assertEquals(0, created.process.exitValue(), created.stderr());
            CliProcess added = CliProcess.run(CLI, "desktop-ingress", "grant", "add", "--session", "web",
                    "--grant-file", webGrant.toString(), "--state-dir", state.toString());
            assertEquals(0, added.process.exitValue(), added.stderr());

            String[] hostPort = proxy.split(":");
            Browser browser = Browser.launch(Browser.Options.proxied(
                    new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])),
                    credential.get("username").asText(), credential.get("password").asText()).withProfile(profile));
            open.add(browser);
            Page page = browser.newPage();
            String origin = "http://localhost:" + app.port();
            JsonNode nav = page.navigate(origin + "/hello");
            assertTrue(nav.path("errorText").asText().isEmpty(), "first navigation: " + nav);
            assertEquals(SampleApp.HELLO_BODY.strip(), page.evaluateString("document.body.innerText").strip());
            int challengesBefore = page.proxyChallenges();

            ingress.process.destroy(); // SIGTERM, as a restart by the user or systemd does
            assertEquals(0, ingress.awaitExit(CLI), ingress.stderr());
            long t0 = System.nanoTime();
            CliProcess again = CliProcess.start("desktop-ingress", run);
            open.add(again);
            JsonNode readyAgain = again.awaitReady(CLI);
            long restartMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertEquals(proxy, readyAgain.get("proxy").asText(), "the proxy port is the one the browser has");

            // The open page's next requests: a fetch from the page, then a reload, with the browser's one credential.
            String fetched = page.waitFor("fetch('/hello').then(r => r.ok ? r.text() : '')"
                    + ".catch(e => '')", Duration.ofSeconds(30)).asText();
            assertEquals(SampleApp.HELLO_BODY.strip(), fetched.strip(), "the page's fetch after the restart");
            page.reload();
            assertEquals(SampleApp.HELLO_BODY.strip(), page.evaluateString("document.body.innerText").strip());

            CliProcess listed = CliProcess.run(CLI, "desktop-ingress", "session", "list", "--state-dir",
                    state.toString());
            assertEquals(0, listed.process.exitValue(), listed.stderr());
            List<String> ids = new ArrayList<>();
            JSON.readTree(listed.stdout()).get("sessions").forEach(s -> ids.add(s.get("id").asText()));
            assertTrue(ids.contains("web"), "the control-created session survived the restart: " + ids);
            System.out.printf("{\"test\":\"ingress_restart_browser\",\"proxy\":\"%s\",\"restartMillis\":%d,"
                            + "\"proxyChallengesBefore\":%d,\"proxyChallengesAfter\":%d}%n", proxy, restartMillis,
                    challengesBefore, page.proxyChallenges() - challengesBefore);
            for (CliProcess p : List.of(ingress, again)) {
                String out = p.stdout() + p.stderr();
                assertTrue(!out.contains(credential.get("password").asText()), "the password is never printed");
            }
        } finally {
            for (int i = open.size() - 1; i >= 0; i--) {
                open.get(i).close();
            }
            try (var files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static String grant(Path keys, String session, int port) throws Exception {
        CliProcess issue = CliProcess.run(CLI, "env-gateway", "grant", "issue", "--keys", keys.toString(),
                "--env", "e", "--session", session, "--target", "localhost:" + port, "--ttl", "10m");
        assertEquals(0, issue.process.exitValue(), issue.stderr());
        return issue.stdout().trim();
    }

    private static Path secret(Path dir, String name, String content) throws Exception {
        Path file = dir.resolve(name);
        Files.writeString(file, content + "\n");
        Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        return file;
    }
}
