package dev.previewtunnel.gateway.docs;

import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.grants.GrantFailure;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/operations.md's "Troubleshooting by reason" has one row per grant/token failure reason (the grant_* and
 * token_* strings of the audit log, the metrics' reason label and doctor) and one per exit code, each with a cause
 * and a fix, and no row for a reason or code that does not exist: a new reason cannot ship undocumented.
 */
class TroubleshootingDocsTest {
    private static final String HEADING = "### Troubleshooting by reason";

    @Test
    void everyFailureReasonHasARowWithCauseAndFix() throws Exception {
        List<String[]> rows = rows(section(), "| reason | cause | fix |");
        Set<String> documented = new TreeSet<>();
        for (String[] row : rows) {
            documented.addAll(Arrays.asList(row[0].replace("`", "").split(" / ")));
            assertTrue(row.length == 3 && row[1].length() > 20 && row[2].length() > 10,
                    () -> "cause and fix for " + Arrays.toString(row));
        }
        Set<String> reasons = Arrays.stream(GrantFailure.values()).flatMap(f -> Stream.of(f.code(), f.tokenCode()))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(reasons, documented, "one row per GrantFailure reason (grant_* / token_*), and no other");
    }

    @Test
    void everyExitCodeHasARow() throws Exception {
        List<String[]> rows = rows(section(), "| code | cause | fix |");
        Set<Integer> documented = new TreeSet<>();
        for (String[] row : rows) {
            documented.add(Integer.parseInt(row[0]));
            assertTrue(row.length == 3 && row[1].length() > 5 && row[2].length() > 5, () -> Arrays.toString(row));
        }
        Set<Integer> codes = new TreeSet<>();
        for (Field f : ExitCodes.class.getFields()) {
            if (f.getType() == int.class && Modifier.isStatic(f.getModifiers())) {
                codes.add(f.getInt(null));
            }
        }
        assertEquals(Set.of(0, 1, 2, 3, 4), codes, "the exit codes this test knows");
        assertEquals(codes, documented, "one row per exit code");
    }

    private static String section() throws Exception {
        String doc = Files.readString(Path.of("..", "docs", "operations.md"));
        int start = doc.indexOf(HEADING);
        assertTrue(start >= 0, "no '" + HEADING + "' in docs/operations.md");
        int end = doc.indexOf("\n#", start + HEADING.length());
        return end < 0 ? doc.substring(start) : doc.substring(start, end);
    }

    /** The body rows of the table whose header line is {@code header}, split into trimmed cells. */
    private static List<String[]> rows(String section, String header) {
        List<String> lines = section.lines().toList();
        int at = lines.indexOf(header);
        assertTrue(at >= 0, "no table '" + header + "'");
        List<String[]> rows = new ArrayList<>();
        for (int i = at + 2; i < lines.size() && lines.get(i).startsWith("|"); i++) {
            String line = lines.get(i);
            String[] cells = line.substring(1, line.length() - 1).split(" \\| ");
            rows.add(Arrays.stream(cells).map(String::strip).toArray(String[]::new));
        }
        assertTrue(!rows.isEmpty(), "rows under '" + header + "'");
        return rows;
    }
}
