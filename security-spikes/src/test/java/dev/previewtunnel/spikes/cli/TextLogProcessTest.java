package dev.previewtunnel.spikes.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.sampleapp.SampleApp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real jars as a person runs them (issue 20, "a terminal is for people"): {@code run --log-format text} and
 * {@code serve --log-format text} write text lines, the browser command a plain line of its own to copy; the audit
 * goes by default to audit.jsonl in each state directory, JSON lines, and not to the terminal; stdout keeps the
 * one JSON ready line.
 */
class TextLogProcessTest {
    private static final Duration CLI = Duration.ofSeconds(60);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TEXT_LINE = "\\d\\d:\\d\\d:\\d\\d\\.\\d{3} (ERROR|WARN |INFO |DEBUG|TRACE) \\S+: .*";
    private static SampleApp app;
    private static Path dir;

    @BeforeAll
    static void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        dir = Files.createTempDirectory("ptun-textlog");
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
    void textOnTheTerminalPlainBrowserLineAuditInTheStateDirectories() throws Exception {
        CliTunnel.Secrets secrets = CliTunnel.Secrets.issue(dir, "e", "localhost:" + app.port());
        Path gatewayState = dir.resolve("gateway-state");
        Path ingressState = dir.resolve("ingress-state");
        String proxy;
        try (CliProcess gateway = CliProcess.startAsGiven("env-gateway", "serve", "--keys",
                secrets.keys().toString(), "--env", "e", "--listen", "127.0.0.1:0", "--state-dir",
                gatewayState.toString(), "--log-format", "text")) {
            String url = gateway.awaitReady(CLI).get("url").asText();
            try (CliProcess ingress = CliProcess.startAsGiven("desktop-ingress", "run", "--gateway", url,
                    "--token-file", secrets.token().toString(), "--grant-file", secrets.grant().toString(),
                    "--state-dir", ingressState.toString(), "--log-format", "text")) {
                JsonNode ready = ingress.awaitReady(CLI);
                proxy = ready.get("proxy").asText();
                CliTunnel.assertPatternDownload(CliTunnel.proxiedClient(ready), app.port(), 64 * 1024);
                refused(proxy, "localhost:" + app.port());
                ingress.process.destroy(); // SIGTERM
                assertEquals(0, ingress.awaitExit(CLI), ingress::stderr);
                String browser = "chromium --proxy-server=http://" + proxy + " --proxy-bypass-list='<-loopback>' "
                        + "--user-data-dir=$(mktemp -d) http://localhost:" + app.port() + "/";
                List<String> err = ingress.stderrLines();
                System.out.println("desktop-ingress run --log-format text, stderr:\n" + String.join("\n", err));
                assertTrue(err.contains(browser), "the browser command alone on a line: " + err);
                err.stream().filter(l -> !l.equals(browser))
                        .forEach(l -> assertTrue(l.matches(TEXT_LINE), "a text log line: " + l));
                assertTrue(err.stream().anyMatch(l -> l.endsWith("AuditDestination: audit events go to "
                        + ingressState.resolve("audit.jsonl"))), err::toString);
                assertTrue(err.stream().anyMatch(l -> l.contains("RunCommand: ingress stopped")), err::toString);
                assertFalse(String.join("\n", err).contains(Files.readString(secrets.token()).strip()));
            }
            gateway.process.destroy();
            assertEquals(0, gateway.awaitExit(CLI), gateway::stderr);
            List<String> err = gateway.stderrLines();
            err.forEach(l -> assertTrue(l.matches(TEXT_LINE), "a text log line: " + l));
            assertTrue(err.stream().anyMatch(l -> l.contains("ServeCommand: gateway stopped")), err::toString);
        }
        List<String> ingressAudit = auditEvents(ingressState.resolve("audit.jsonl"));
        assertTrue(ingressAudit.contains("request_refused"), ingressAudit::toString);
        List<String> gatewayAudit = auditEvents(gatewayState.resolve("audit.jsonl"));
        assertTrue(gatewayAudit.contains("connection_opened") && gatewayAudit.contains("stream_opened"),
                gatewayAudit::toString);
    }

    /** The events of an audit file, which must be owner-only and hold JSON objects alone. */
    private static List<String> auditEvents(Path file) throws Exception {
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        return Files.readAllLines(file).stream().map(l -> {
            try {
                return JSON.readTree(l).get("event").asText();
            } catch (Exception e) {
                throw new AssertionError("not an audit object: " + l, e);
            }
        }).toList();
    }

    /** A request without the session's credential: 407, audited as request_refused. */
    private static void refused(String proxy, String target) throws Exception {
        String[] hostPort = proxy.split(":");
        try (Socket browser = new Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
            browser.setSoTimeout(20_000);
            OutputStream out = browser.getOutputStream();
            out.write(("GET http://" + target + "/ HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = browser.getInputStream();
            assertEquals("HTTP/1.1 407", new String(in.readNBytes(12), StandardCharsets.US_ASCII));
        }
    }
}
