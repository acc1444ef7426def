package dev.previewtunnel.spikes.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/** The repository's Markdown docs as the docs tests read them: README.md and docs/*.md, by repository path. */
final class DocsFiles {
    /** The repository root: security-spikes' tests run in security-spikes/. */
    static final Path ROOT = Path.of("").toAbsolutePath().getParent();

    private DocsFiles() {
    }

    /** README.md and every docs/*.md, as paths relative to the root (what failure messages name). */
    static List<Path> all() {
        List<Path> docs = new ArrayList<>(List.of(Path.of("README.md")));
        try (Stream<Path> files = Files.list(ROOT.resolve("docs"))) {
            files.filter(p -> p.toString().endsWith(".md")).sorted().forEach(p -> docs.add(ROOT.relativize(p)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return docs;
    }

    static String read(Path doc) {
        try {
            return Files.readString(ROOT.resolve(doc));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The text of the section under {@code heading} (a whole heading line), up to the next heading of any level. */
    static String section(Path doc, String heading) {
        String text = read(doc);
        int start = text.indexOf("\n" + heading + "\n");
        if (start < 0) {
            throw new AssertionError(doc + ": no heading '" + heading + "'");
        }
        int end = text.indexOf("\n#", start + heading.length() + 2);
        return end < 0 ? text.substring(start) : text.substring(start, end);
    }

    /** The body rows of the Markdown table whose header line is {@code header}, as trimmed cells. */
    static List<String[]> tableRows(String section, String header) {
        List<String> lines = section.lines().toList();
        int at = lines.indexOf(header);
        if (at < 0) {
            throw new AssertionError("no table '" + header + "'");
        }
        List<String[]> rows = new ArrayList<>();
        for (int i = at + 2; i < lines.size() && lines.get(i).startsWith("|"); i++) {
            String line = lines.get(i);
            rows.add(Stream.of(line.substring(1, line.length() - 1).split(" \\| ")).map(String::strip)
                    .toArray(String[]::new));
        }
        return rows;
    }
}
