package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
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
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The ingress's audit destination is a setting like the gateway's (here the {@code "audit-file"} config key): the
 * audit events go to that owner-only file and only there; an existing file others can read is refused.
 */
class RunAuditFileTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    @Test
    void auditEventsGoOnlyToTheOwnerOnlyFile() throws Exception {
        try (TestStack stack = TestStack.start(tmp)) {
            Path audit = tmp.resolve("ingress-audit.log");
            Path config = Files.writeString(tmp.resolve("ingress.json"), "{\"audit-file\": \"ingress-audit.log\"}");
            RunningIngress running = RunningIngress.start("run", "--config", config.toString(), "--gateway",
                    stack.url(), "--token", stack.token(), "--grant", stack.grant("default", stack.app.port()),
                    "--state-dir", tmp.resolve("s").toString());
            try {
                InetSocketAddress proxy = IngressCliHarness.proxyAddress(running.readyLine());
                try (Socket browser = new Socket(proxy.getAddress(), proxy.getPort())) {
                    browser.setSoTimeout(20_000);
                    OutputStream out = browser.getOutputStream();
                    String target = "localhost:" + stack.app.port();
                    out.write(("GET http://" + target + "/hello HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    InputStream in = browser.getInputStream();
                    byte[] head = in.readNBytes(12);
                    assertEquals("HTTP/1.1 407", new String(head, StandardCharsets.US_ASCII),
                            "no session credential: refused, and audited");
                }
            } finally {
                running.close();
            }
            assertEquals(0, running.awaitExit(), running.captured::err);

            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(audit)));
            List<String> events = Files.readAllLines(audit).stream().map(RunAuditFileTest::auditEvent).toList();
            assertTrue(events.contains("request_refused"), events::toString);
            String err = running.captured.err();
            assertTrue(err.contains("\"loggerName\":\"dev.previewtunnel.ingress"), "stderr has the application log");
            assertFalse(err.contains("\"side\":\"ingress\"") || err.contains("request_refused"),
                    "no audit object on stderr:\n" + err);
        }
    }

    @Test
    void anAuditFileOthersCanReadIsRefused() throws Exception {
        Path audit = Files.writeString(tmp.resolve("audit.log"), "");
        Files.setPosixFilePermissions(audit, PosixFilePermissions.fromString("rw-r-----"));
        Result r = IngressCliHarness.run("run", "--gateway", "ws://127.0.0.1:1/tunnel", "--token", "t",
                "--state-dir", tmp.resolve("s").toString(), "--audit-file", audit.toString());
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--audit-file: " + audit + " is accessible by group/others (rw-r-----)")
                && r.err().contains("chmod 600 " + audit), r::toString);
    }

    /** The event of an audit object (fails on anything else: an application log line in the file). */
    private static String auditEvent(String line) {
        try {
            JsonNode n = JSON.readTree(line);
            // The test's gateway runs in this JVM and shares the audit logger, so its events land here too.
            assertTrue(Set.of("ingress", "gateway").contains(n.get("side").asText()), line);
            assertTrue(n.has("ts") && !n.has("loggerName"), line);
            return n.get("event").asText();
        } catch (Exception e) {
            throw new AssertionError("not an audit object: " + line, e);
        }
    }
}
