package dev.previewtunnel.cli;

import dev.previewtunnel.cli.InProcessCli.Result;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CompletionCommandTest {
    @Command(name = "tool", subcommands = {Tool.Serve.class, CompletionCommand.class})
    static final class Tool {
        @Command(name = "serve")
        static final class Serve implements Runnable {
            @Option(names = "--listen-address")
            String listen;

            @Override
            public void run() {
            }
        }
    }

    @Test
    void bashScriptNamesTheSubcommandsAndOptionsAndParses() throws Exception {
        Result r = InProcessCli.run(new Tool(), "tool: ", "completion", "bash");
        assertEquals(0, r.exitCode(), r::toString);
        String script = r.out();
        assertTrue(script.contains("complete -F _complete_tool"), script);
        assertTrue(script.contains("serve") && script.contains("completion"), script);
        assertTrue(script.contains("--listen-address"), script);
        assertTrue(script.contains("(\"bash\" \"zsh\")"), "the SHELL values are completed: " + script);
        assertShellAccepts("bash", script);
    }

    @Test
    void zshScriptIsACompdefFileOfTheSameCompletion() throws Exception {
        Result r = InProcessCli.run(new Tool(), "tool: ", "completion", "zsh");
        assertEquals(0, r.exitCode(), r::toString);
        String script = r.out();
        assertTrue(script.startsWith("#compdef tool\n"), script);
        assertTrue(script.contains("bashcompinit") && script.contains("--listen-address"), script);
        assertTrue(script.contains("_bash_complete -o default -F _complete_tool"), script);
        assertShellAccepts("bash", script); // zsh's syntax check needs zsh; the script is bash-compatible text
    }

    @Test
    void anUnknownShellIsAUsageError() {
        Result r = InProcessCli.run(new Tool(), "tool: ", "completion", "fish");
        assertTrue(r.exitCode() != 0 && r.out().isEmpty() && r.err().contains("fish"), r::toString);
    }

    /** {@code SHELL -n}: parses the script without running it. */
    static void assertShellAccepts(String shell, String script) throws IOException, InterruptedException {
        Path file = Files.createTempFile("completion", ".sh");
        try {
            Files.writeString(file, script, StandardCharsets.UTF_8);
            Process p = new ProcessBuilder(shell, "-n", file.toString()).redirectErrorStream(true).start();
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), shell + " -n did not finish");
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.exitValue(), () -> shell + " -n rejected the script: " + output);
        } finally {
            Files.delete(file);
        }
    }
}
