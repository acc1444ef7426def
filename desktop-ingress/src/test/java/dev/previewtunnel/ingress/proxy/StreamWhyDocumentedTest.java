package dev.previewtunnel.ingress.proxy;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** docs/operations.md's ingress {@code stream_closed} row lists exactly the {@code why} values StreamRecord writes. */
class StreamWhyDocumentedTest {
    private static final Path DOC = Path.of("..", "docs", "operations.md");

    @Test
    void everyWhyIsDocumentedAndNothingElse() throws Exception {
        assertTrue(Files.isRegularFile(DOC), "the operations guide is at " + DOC.toAbsolutePath());
        String row = Files.readAllLines(DOC).stream()
                .filter(l -> l.startsWith("| ingress | `stream_closed` |")).findFirst().orElseThrow();
        String whys = row.substring(row.indexOf("`why`:"));
        Matcher m = Pattern.compile("`([a-z_]+)`").matcher(whys);
        List<String> documented = new java.util.ArrayList<>();
        while (m.find()) {
            if (!m.group(1).equals("why") && !m.group(1).equals("http")) {
                documented.add(m.group(1));
            }
        }
        assertEquals(StreamRecord.WHY_VALUES.stream().sorted().toList(), documented.stream().sorted().toList());
    }
}
