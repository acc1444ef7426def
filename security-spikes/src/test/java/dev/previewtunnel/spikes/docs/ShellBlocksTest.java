package dev.previewtunnel.spikes.docs;

import dev.previewtunnel.spikes.docs.ShellBlocks.Block;
import dev.previewtunnel.spikes.docs.ShellBlocks.Command;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The docs' shell block convention as {@link ShellBlocks} reads it, and how outputs are compared by shape. */
class ShellBlocksTest {
    private static final String DOC = String.join("\n",
            "Intro",
            "```bash",
            "G=g.jar; I=i.jar   # two jars",
            "# a comment line",
            "java -jar $G serve \\",
            "    --listen 127.0.0.1:7443 &",
            "cat > ~/x.sh <<'EOF'",
            "#!/bin/sh",
            "echo '# not a comment' && true &",
            "EOF",
            "```",
            "```console",
            "$ java -jar $I run --token-file ~/none   # exit 3",
            "desktop-ingress: --token-file file /home/you/none does not exist or is not a file",
            "$ java -jar $I status",
            "proxy      127.0.0.1:44419",
            "",
            "web              ptun-web             deny    0     localhost:5173",
            "```",
            "```json",
            "{\"not\":\"shell\"}",
            "```",
            "```",
            "plain output",
            "```");

    @Test
    void commandsOutputsExitCodesAndBackground() {
        List<Block> blocks = ShellBlocks.parse(DOC);
        assertEquals(2, blocks.size(), "json and unlabelled blocks are not shell");
        List<Command> script = blocks.get(0).commands();
        assertEquals(3, script.size(), script::toString);
        assertEquals(3, script.get(0).line());
        assertTrue(script.get(1).background());
        assertEquals("java -jar $G serve \\\n    --listen 127.0.0.1:7443 &", script.get(1).text());
        assertEquals(5, script.get(1).line());
        assertTrue(script.get(2).text().endsWith("EOF"), "a here-document runs to its terminator");
        assertFalse(script.get(2).background(), "an & inside the here-document is not the command's");

        List<Command> console = blocks.get(1).commands();
        assertEquals(3, console.get(0).expectedExit());
        assertEquals(0, console.get(1).expectedExit());
        assertEquals(1, console.get(0).output().size());
        assertEquals(List.of("proxy", "web ptun-web"), DocShellBlocksRunTest.shapes(console.get(1).output()));
    }

    @Test
    void jsonOutputIsComparedByKeysAndEvent() {
        assertEquals(List.of("json[event, kid] event=keys_created"), DocShellBlocksRunTest.shapes(
                List.of("{\"event\":\"keys_created\",\"kid\":\"k-13d919e5b1c2\"}")));
        assertEquals(DocShellBlocksRunTest.shapes(List.of("ok    token-file        /home/you/t is owner-only")),
                DocShellBlocksRunTest.shapes(List.of("ok    token-file        /tmp/x/t is owner-only")));
    }

    @Test
    void theOutputShownForABashCommandIsTheNextBlockWhenItHasNoLanguage() {
        String doc = String.join("\n", "```bash", "java -jar i.jar open ssh://devbox --port 5173", "```",
                "It prints one line:", "", "```", "{\"event\":\"open\"}", "```");
        assertEquals(List.of("{\"event\":\"open\"}"), ShellBlocks.shownAfter(doc, 2));
        assertEquals(List.of(), ShellBlocks.shownAfter(DOC, 3), "the next block is a console block: nothing shown");
        assertEquals(List.of(), ShellBlocks.shownAfter(doc, 7), "no block after the last one");
    }

    @Test
    void commentsAreFoundOutsideQuotesOnly() {
        assertEquals("echo 'a # b' ", ShellBlocks.withoutComment("echo 'a # b' # c"));
        assertEquals("x=$(mktemp -d)#y", ShellBlocks.withoutComment("x=$(mktemp -d)#y"));
    }
}
