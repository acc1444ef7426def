package dev.previewtunnel.spikes.docs;

import dev.previewtunnel.cli.ExitCodes;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Exit codes in the docs against {@link ExitCodes}: docs/operations.md's "Exit codes" table has one row per code
 * and no other, and every "exit N" / "exits with status N" in any doc names a code that exists. What each command
 * really returns is checked where the docs run commands ({@code DocShellBlocksRunTest}, {@code # exit N}).
 */
class ExitCodesDocumentedTest {
    private static final Pattern EXIT_MENTION = Pattern.compile("\\bexits? (?:with status |with code |code )?(\\d+)");

    @Test
    void theExitCodeTableHasOneRowPerCode() throws Exception {
        Path doc = Path.of("docs", "operations.md");
        Set<Integer> documented = new TreeSet<>();
        for (String[] row : DocsFiles.tableRows(DocsFiles.section(doc, "## Exit codes"), "| code | meaning |")) {
            documented.add(Integer.parseInt(row[0]));
        }
        assertEquals(codes(), documented, doc + " '## Exit codes': one row per ExitCodes constant, and no other");
    }

    @Test
    void everyExitCodeMentionedExists() throws Exception {
        Set<Integer> codes = codes();
        List<String> wrong = new ArrayList<>();
        for (Path doc : DocsFiles.all()) {
            List<String> lines = DocsFiles.read(doc).lines().toList();
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = EXIT_MENTION.matcher(lines.get(i));
                while (m.find()) {
                    if (!codes.contains(Integer.parseInt(m.group(1)))) {
                        wrong.add(doc + ":" + (i + 1) + ": '" + m.group() + "'");
                    }
                }
            }
        }
        assertEquals(List.of(), wrong, "exit codes the programs do not have (ExitCodes: " + codes + ")");
    }

    /** The values of ExitCodes' int constants. */
    static Set<Integer> codes() throws IllegalAccessException {
        Set<Integer> codes = new TreeSet<>();
        for (Field f : ExitCodes.class.getFields()) {
            if (f.getType() == int.class && Modifier.isStatic(f.getModifiers())) {
                codes.add(f.getInt(null));
            }
        }
        return codes;
    }
}
