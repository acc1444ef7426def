package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code run --log-format text}: the log is lines a person reads, the browser command a line of its own to copy,
 * the audit (by default) JSON lines in STATE_DIR/audit.jsonl and not on the terminal; stdout keeps its JSON line.
 */
class RunLogFormatTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    @Test
    void textLogPlainBrowserLineAndTheAuditInTheStateDirectory() throws Exception {
        try (TestStack stack = TestStack.start(tmp)) {
            Path state = tmp.resolve("state");
            Path tokenFile = TestStack.secretFile(tmp, "token", stack.token() + "\n");
            String grant = stack.grant("default", stack.app.port());
            Path grantFile = TestStack.secretFile(tmp, "grant", grant + "\n");
            RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token-file",
                    tokenFile.toString(), "--grant-file", grantFile.toString(), "--state-dir", state.toString(),
                    "--log-format", "text");
            String proxy;
            try {
                JsonNode ready = running.readyLine(); // stdout: the one JSON line scripts read, in any format
                proxy = ready.get("proxy").asText();
                refusedRequest(IngressCliHarness.proxyAddress(ready), "localhost:" + stack.app.port());
            } finally {
                running.close();
            }
            assertEquals(0, running.awaitExit(), running.captured::err);
            String err = running.captured.err();
            List<String> lines = IngressCliHarness.ingressLines(err);
            String browser = "chromium --proxy-server=http://" + proxy + " --proxy-bypass-list='<-loopback>' "
                    + "--user-data-dir=$(mktemp -d) http://localhost:" + stack.app.port() + "/";
            assertTrue(lines.contains(browser), "the browser command, alone on its line:\n" + err);
            Path audit = state.resolve("audit.jsonl").toAbsolutePath();
            for (String line : lines) {
                if (line.equals(browser)) {
                    continue;
                }
                assertTrue(line.matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} (ERROR|WARN |INFO |DEBUG|TRACE) \\S+: .*"),
                        "a text log line: " + line);
            }
            assertTrue(err.contains("INFO  AuditDestination: audit events go to " + audit + "\n"), err);
            assertTrue(err.contains("RunCommand: proxy ready on " + proxy + "; start a browser profile of its own "
                    + "with the line below"), err);
            assertTrue(err.contains("RunCommand: ingress stopped"), "the last line is text too:\n" + err);
            assertFalse(err.contains("request_refused"), "no audit event on the terminal:\n" + err);
            InProcessCli.assertNoSecrets(running.captured.out(), err, stack.token(), grant);

            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(audit)));
            List<String> events = Files.readAllLines(audit).stream()
                    .map(l -> {
                        try {
                            return JSON.readTree(l).get("event").asText();
                        } catch (Exception e) {
                            throw new AssertionError("not a JSON audit line: " + l, e);
                        }
                    }).toList();
            assertTrue(events.contains("request_refused"), events::toString);
        }
    }

    @Test
    void levelFromTheEnvironmentAndTextFromTheConfigFile() throws Exception {
        // text from the config file: not the default here (stderr is no terminal in a test, so json would be).
        try (TestStack stack = TestStack.start(tmp)) {
            Path config = Files.writeString(tmp.resolve("ingress.json"), "{\"log-format\": \"text\"}");
            Settings.environmentForTests(Map.of("PTUN_INGRESS_LOG_LEVEL", "warn"));
            RunningIngress running;
            try {
                running = RunningIngress.start("run", "--config", config.toString(), "--gateway", stack.url(),
                        "--token", stack.token(), "--state-dir", tmp.resolve("s").toString());
            } finally {
                Settings.environmentForTests(null);
            }
            try {
                running.readyLine();
            } finally {
                running.close();
            }
            assertEquals(0, running.awaitExit(), running.captured::err);
            List<String> lines = IngressCliHarness.ingressLines(running.captured.err());
            assertFalse(lines.isEmpty(), "text mode prints the browser line whatever the level");
            for (String line : lines) {
                assertFalse(line.startsWith("{"), "text, not JSON: " + line);
                assertFalse(line.contains(" INFO "), "no info line at warn: " + line);
            }
        }
    }

    @Test
    void aBadValueIsAUsageErrorNamingWhereItCameFrom() throws Exception {
        Path config = Files.writeString(tmp.resolve("ingress.json"), "{\"log-format\": \"yaml\"}");
        Result r = IngressCliHarness.run("run", "--config", config.toString(), "--gateway",
                "ws://127.0.0.1:1/tunnel", "--token", "t", "--state-dir", tmp.resolve("s").toString());
        assertTrue(r.usageError().startsWith("desktop-ingress: log-format (from config file " + config + "): must "
                + "be text or json, got 'yaml'"), r::toString);
        r = IngressCliHarness.run("run", "--log-level", "loud", "--gateway", "ws://127.0.0.1:1/tunnel", "--token",
                "t", "--state-dir", tmp.resolve("s").toString());
        assertTrue(r.usageError().contains("must be error, warn, info, debug or trace, got 'loud'"), r::toString);
    }

    /** A request without the session's credential: refused (407) and audited. */
    private static void refusedRequest(InetSocketAddress proxy, String target) throws Exception {
        try (Socket browser = new Socket(proxy.getAddress(), proxy.getPort())) {
            browser.setSoTimeout(20_000);
            OutputStream out = browser.getOutputStream();
            out.write(("GET http://" + target + "/hello HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = browser.getInputStream();
            assertEquals("HTTP/1.1 407", new String(in.readNBytes(12), StandardCharsets.US_ASCII));
        }
    }
}
