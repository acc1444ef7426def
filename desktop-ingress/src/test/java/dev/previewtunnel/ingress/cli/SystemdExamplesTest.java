package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/systemd/ingress.json and the ingress's unit go through the real settings loading, so the examples cannot
 * rot: run starts with the file (the gateway URL and the ports replaced by flags to fit this machine), the values
 * the flags replaced still parse as run reads them, and every PTUN_INGRESS_* variable the unit sets is a setting.
 */
class SystemdExamplesTest {
    private static final Path EXAMPLE = Path.of("..", "docs", "systemd", "ingress.json");
    private static final Path UNIT = Path.of("..", "docs", "systemd", "preview-tunnel-ingress.service");

    @TempDir
    Path tmp;

    @Test
    void theExampleConfigStartsTheIngress() throws Exception {
        try (TestStack stack = TestStack.start(tmp)) {
            RunningIngress running = RunningIngress.start("run", "--config", EXAMPLE.toString(), "--gateway",
                    stack.url(), "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--token",
                    stack.token(), "--state-dir", tmp.resolve("state").toString());
            try {
                JsonNode ready = running.readyLine();
                assertTrue(ready.has("controlStateFile"), "control on, at control-listen from the file");
                assertEquals(2, running.command.ingress().config().poolSize(), "pool from the file");
            } finally {
                running.close();
            }
            assertEquals(0, running.awaitExit(), running.captured::err);
        }

        CommandSpec spec = new CommandLine(new IngressMain()).getSubcommands().get("run").getCommandSpec();
        Settings s = Settings.load(spec, EXAMPLE, IngressCli.ENV_PREFIX, RunCommand.CONFIG_KEYS);
        assertEquals(7443, IngressCli.parseGateway(spec, "gateway", s.string("gateway", null, null)).getPort());
        assertEquals(3128, s.loopbackListen(spec, "listen", s.string("listen", null, null), 0).getPort());
        assertEquals(9465, s.loopbackListen(spec, "metrics-listen", s.string("metrics-listen", null, null), 0)
                .getPort());
    }

    @Test
    void everyVariableTheUnitSetsIsASetting() throws Exception {
        List<String> variables = new ArrayList<>();
        for (String line : Files.readAllLines(UNIT)) {
            if (line.startsWith("Environment=" + IngressCli.ENV_PREFIX)) {
                variables.add(line.substring("Environment=".length(), line.indexOf('=', "Environment=".length())));
            }
        }
        assertTrue(variables.contains("PTUN_INGRESS_TOKEN_FILE"), variables::toString);
        for (String v : variables) {
            String key = v.substring(IngressCli.ENV_PREFIX.length()).toLowerCase(Locale.ROOT).replace('_', '-');
            assertTrue(key.equals("config") || RunCommand.CONFIG_KEYS.contains(key), () -> v + " is not a setting");
        }
    }
}
