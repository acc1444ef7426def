package dev.previewtunnel.bench;

import dev.previewtunnel.spikes.lab.LabProcess;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * What a tunnel's gateway and ingress logs say, and the floor's processes': their errors for the results, counts of
 * matching lines.
 */
final class TunnelLogs {
    private TunnelLogs() {
    }

    /** The tunnel's WARN/ERROR log lines, if any, under {@code logErrors}. */
    static void putLogErrors(Map<String, Object> r, Lab.Tunnel t) {
        String gwErr = errors(t.gateway());
        String inErr = errors(t.ingress());
        if (!gwErr.isEmpty() || !inErr.isEmpty()) {
            r.put("logErrors", Map.of("gateway", gwErr, "ingress", inErr));
        }
    }

    /**
     * The floor has no log but the refusals its desktop side prints (any is a stream the figures lost) and what
     * SLF4J prints when the no-op provider it was given did not load (then a logging backend ran in the floor):
     * SLF4J(I) says which provider it loads, (W) and (E) that it did not load the one asked for.
     */
    static void putFloorLogErrors(Map<String, Object> r, List<LabProcess> floorProcesses) {
        Map<String, Object> errors = new LinkedHashMap<>();
        if (r.get("logErrors") instanceof Map<?, ?> earlier) { // ws-floor: the ingress's, from putLogErrors
            earlier.forEach((k, v) -> errors.put(String.valueOf(k), v));
        }
        for (LabProcess p : floorProcesses) {
            long bad = countLines(p, l -> l.contains("open refused") || l.contains("SLF4J(W)")
                    || l.contains("SLF4J(E)"));
            if (bad != 0) {
                errors.put(p.name(), bad + " refused open(s) or SLF4J warning(s): " + p.tail(500));
            }
        }
        if (!errors.isEmpty()) {
            r.put("logErrors", errors);
        }
    }

    /** Lines of a process's log containing both strings. */
    static long countLines(LabProcess p, String a, String b) {
        return countLines(p, l -> l.contains(a) && l.contains(b));
    }

    /** Lines of a process's log that match; -1 when the log cannot be read. */
    static long countLines(LabProcess p, Predicate<String> match) {
        try (var lines = Files.lines(p.log(), StandardCharsets.UTF_8)) {
            return lines.filter(match).count();
        } catch (IOException | UncheckedIOException e) {
            return -1;
        }
    }

    /** The WARN/ERROR log lines of a gateway or ingress (JSON logs on stderr), first few. */
    private static String errors(LabProcess p) {
        try {
            return Files.readAllLines(p.log(), StandardCharsets.UTF_8).stream()
                    .filter(l -> l.contains("\"level\":\"ERROR\"") || l.contains("\"level\":\"WARN\"")
                            || l.contains("Exception"))
                    .limit(5).reduce((a, b) -> a + "\n" + b).orElse("");
        } catch (IOException e) {
            return "";
        }
    }
}
