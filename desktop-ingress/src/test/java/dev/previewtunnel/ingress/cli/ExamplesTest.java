package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.HelpExamples;
import dev.previewtunnel.cli.InProcessCli.Result;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.util.List;

import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every command's help ends with examples that picocli parses into that command; 'help COMMAND...' works. */
class ExamplesTest {

    @Test
    void everyCommandEndsItsHelpWithExamplesThatParse() {
        List<String> commands = HelpExamples.commands(new CommandLine(new IngressMain()));
        assertTrue(commands.containsAll(List.of("desktop-ingress help", "desktop-ingress session close",
                "desktop-ingress grant remove", "desktop-ingress open")), commands::toString);
        assertEquals(List.of(), HelpExamples.problems(() -> new CommandLine(new IngressMain())));
    }

    @Test
    void examplesAreTheLastSectionOfTheHelp() {
        Result r = run("session", "close", "--help");
        assertEquals(0, r.exitCode(), r::toString);
        String out = r.out().stripTrailing();
        assertTrue(out.endsWith("Examples:" + System.lineSeparator() + "  desktop-ingress session close --id web"),
                out);
        assertTrue(out.indexOf("Exit codes:") < out.indexOf("Examples:"), out);
    }

    @Test
    void helpSubcommandPrintsTheHelpOfNestedCommands() {
        Result nested = run("help", "session", "close");
        assertEquals(0, nested.exitCode(), nested::toString);
        assertEquals(run("session", "close", "--help").out(), nested.out());
        Result top = run("help");
        assertEquals(0, top.exitCode(), top::toString);
        assertTrue(top.out().startsWith("Usage: desktop-ingress"), top.out());
        assertTrue(top.out().contains("help") && top.out().contains("Examples:"), top.out());
        Result unknown = run("help", "frobnicate");
        assertEquals(1, unknown.exitCode(), unknown::toString);
        assertTrue(unknown.err().startsWith("desktop-ingress: "), unknown::toString);
    }
}
