package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.HelpExamples;
import dev.previewtunnel.cli.InProcessCli.Result;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.util.List;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every command's help ends with examples that picocli parses into that command; 'help COMMAND...' works. */
class ExamplesTest {

    @Test
    void everyCommandEndsItsHelpWithExamplesThatParse() {
        List<String> commands = HelpExamples.commands(new CommandLine(new GatewayMain()));
        assertTrue(commands.containsAll(List.of("env-gateway help", "env-gateway token issue",
                "env-gateway grant issue", "env-gateway revoke")), commands::toString);
        assertEquals(List.of(), HelpExamples.problems(() -> new CommandLine(new GatewayMain())));
    }

    @Test
    void examplesAreTheLastSectionOfTheHelp() {
        Result r = run("keys", "rotate", "--help");
        assertEquals(0, r.exitCode(), r::toString);
        String out = r.out().stripTrailing();
        assertTrue(out.endsWith("Examples:" + System.lineSeparator() + "  env-gateway keys rotate --dir ~/.ptun-keys"),
                out);
        assertTrue(out.indexOf("Exit codes:") < out.indexOf("Examples:"), out);
    }

    @Test
    void helpSubcommandPrintsTheHelpOfNestedCommands() {
        Result nested = run("help", "keys", "rotate");
        assertEquals(0, nested.exitCode(), nested::toString);
        assertEquals(run("keys", "rotate", "--help").out(), nested.out());
        Result top = run("help");
        assertEquals(0, top.exitCode(), top::toString);
        assertTrue(top.out().startsWith("Usage: env-gateway"), top.out());
        assertTrue(top.out().contains("help") && top.out().contains("Examples:"), top.out());
        Result unknown = run("help", "frobnicate");
        assertEquals(1, unknown.exitCode(), unknown::toString);
        assertTrue(unknown.err().startsWith("env-gateway: "), unknown::toString);
    }
}
