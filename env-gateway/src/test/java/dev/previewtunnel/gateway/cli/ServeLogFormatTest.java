package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.cli.CliHarness.RunningServe;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code serve --log-format text --log-level}: text lines on stderr at the level asked for; the audit, by default in
 * STATE_DIR/audit.jsonl, stays JSON and complete whatever the level.
 */
class ServeLogFormatTest {
    @TempDir
    Path tmp;
    private String keys;

    @BeforeEach
    void keys() {
        keys = tmp.resolve("keys").toString();
        assertEquals(0, run("keys", "init", "--dir", keys).exitCode());
    }

    @Test
    void textAtWarnWithTheAuditInTheStateDirectoryAtAnyLevel() throws Exception {
        Path state = tmp.resolve("state");
        RunningServe serve = RunningServe.start("serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0",
                "--state-dir", state.toString(), "--allow-target", "10.1.2.0/24", "--log-format", "text",
                "--log-level", "warn");
        try {
            serve.readyLine();
        } finally {
            serve.close();
        }
        assertEquals(0, serve.awaitExit(), serve.captured::err);
        List<String> err = serve.captured.err().lines().toList();
        assertTrue(err.stream().anyMatch(l -> l.matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} WARN  ServeCommand: "
                + "non-loopback targets are enabled: grants may reach 10\\.1\\.2\\.0/24 in addition to loopback")),
                err::toString);
        assertTrue(err.stream().noneMatch(l -> l.contains(" INFO ") || l.startsWith("{")), err::toString);
        Path audit = state.resolve("audit.jsonl");
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(audit)));
        assertTrue(Files.readString(audit).startsWith("{\"ts\":"), Files.readString(audit));
        assertTrue(Files.readString(audit).contains("\"event\":\"non_loopback_targets_enabled\""),
                "audited at --log-level warn: " + Files.readString(audit));
    }

    @Test
    void aBadLevelFromTheConfigFileNamesIt() throws Exception {
        Path config = Files.writeString(tmp.resolve("gw.json"), "{\"log-level\": \"verbose\"}");
        Result r = run("serve", "--config", config.toString(), "--keys", keys, "--env", "e", "--listen",
                "127.0.0.1:0");
        assertTrue(r.usageError().startsWith("env-gateway: log-level (from config file " + config + "): must be "
                + "error, warn, info, debug or trace, got 'verbose'"), r::toString);
        assertFalse(Files.exists(tmp.resolve("state")));
    }
}
