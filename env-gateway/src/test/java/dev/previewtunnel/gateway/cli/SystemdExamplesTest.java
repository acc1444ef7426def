package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.cli.CliHarness.RunningServe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/systemd/gateway.json and the gateway's unit go through the real settings loading, so the examples cannot
 * rot: serve starts with the file (only what names this machine's paths and ports replaced by flags), the values
 * the flags replaced still parse as serve reads them, and every PTUN_GATEWAY_* variable the unit sets is a setting.
 */
class SystemdExamplesTest {
    private static final Path EXAMPLE = Path.of("..", "docs", "systemd", "gateway.json");
    private static final Path UNIT = Path.of("..", "docs", "systemd", "preview-tunnel-gateway.service");

    @TempDir
    Path tmp;

    @Test
    void theExampleConfigStartsTheGateway() throws Exception {
        String keys = tmp.resolve("keys").toString();
        assertEquals(0, run("keys", "init", "--dir", keys).exitCode());
        RunningServe serve = RunningServe.start("serve", "--config", EXAMPLE.toString(), "--keys", keys,
                "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                "--state-dir", tmp.resolve("state").toString(), "--audit-file", tmp.resolve("audit.log").toString());
        try {
            GatewayConfig config = serve.command.server().config();
            JsonNode example = new ObjectMapper().readTree(EXAMPLE.toFile());
            assertEquals(example.get("env").asText(), config.environment());
            assertEquals(Duration.ofSeconds(60), config.drainTimeout(), "drain-timeout from the file");
            assertEquals(Duration.ofMinutes(15), config.verifierPolicy().maxGrantLifetime());
        } finally {
            serve.close();
        }
        assertEquals(0, serve.awaitExit(), serve.captured::err);

        // What the flags replaced still parses as serve reads it.
        CommandSpec spec = new CommandLine(new GatewayMain()).getSubcommands().get("serve").getCommandSpec();
        Settings s = Settings.load(spec, EXAMPLE, GatewayCli.ENV_PREFIX, ServeCommand.CONFIG_KEYS);
        assertTrue(s.path("keys", null, null).isAbsolute());
        assertEquals(7443, s.loopbackListen(spec, "listen", s.string("listen", null, null), 7443).getPort());
        assertEquals(7444, s.loopbackListen(spec, "admin-listen", s.string("admin-listen", null, null), 0).getPort());
        assertEquals(9464, s.loopbackListen(spec, "metrics-listen", s.string("metrics-listen", null, null), 0)
                .getPort());
        // No audit-file: the default, audit.jsonl in the state directory, rotated by serve (an explicit path is not).
        assertEquals(null, s.string("audit-file", null, null));
    }

    @Test
    void everyVariableTheUnitSetsIsASetting() throws Exception {
        List<String> variables = new ArrayList<>();
        for (Iterator<String> it = Files.readAllLines(UNIT).iterator(); it.hasNext(); ) {
            String line = it.next();
            if (line.startsWith("Environment=" + GatewayCli.ENV_PREFIX)) {
                variables.add(line.substring("Environment=".length(), line.indexOf('=', "Environment=".length())));
            }
        }
        assertTrue(variables.contains("PTUN_GATEWAY_CONFIG"), variables::toString);
        for (String v : variables) {
            String key = v.substring(GatewayCli.ENV_PREFIX.length()).toLowerCase(Locale.ROOT).replace('_', '-');
            assertTrue(key.equals("config") || ServeCommand.CONFIG_KEYS.contains(key), () -> v + " is not a setting");
        }
    }
}
