package dev.previewtunnel.ingress.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The rules of {@code promtool check metrics} (client_golang's promlint) over a text exposition (format 0.0.4),
 * plus this project's own: every family has a non-empty HELP and a TYPE; counters end in {@code _total} and
 * nothing else does; no non-base units ({@code _milliseconds}, {@code _ns}, {@code _kilobytes}...) and no unit
 * abbreviations; no type name in a name; names and label names snake_case; {@code le} only on histograms and
 * {@code quantile} only on summaries; {@code _bucket}/{@code _count}/{@code _sum} only as a histogram's or
 * summary's series; our own families start with {@code ptun_} (only Micrometer's {@code jvm_}, {@code process_},
 * {@code system_} do not); {@code _info} families are gauges whose samples are 1; a name that says {@code timestamp} or
 * {@code _since} ends in {@code _timestamp_seconds} (Prometheus' own {@code process_start_time_seconds} says
 * neither); no {@code _max} series except the ones the registry keeps on purpose.
 *
 * <p>Reads the exposition line by line: the family name from HELP/TYPE, the sample name, label names and, for
 * {@code _info} only, the value. Returns every problem found, one line each (empty: clean).
 */
final class PromLint {
    private static final Pattern SNAKE = Pattern.compile("[a-z][a-z0-9]*(_[a-z0-9]+)*");
    private static final Pattern SAMPLE = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)})? (\\S+)( \\S+)?");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"(?:[^\"\\\\]|\\\\.)*\",?");
    private static final Set<String> TYPES = Set.of("counter", "gauge", "histogram", "summary", "untyped");
    /** Units promlint refuses, with the base unit to use. */
    private static final Map<String, String> NON_BASE_UNITS = Map.ofEntries(
            Map.entry("nanoseconds", "seconds"), Map.entry("microseconds", "seconds"),
            Map.entry("milliseconds", "seconds"), Map.entry("minutes", "seconds"), Map.entry("hours", "seconds"),
            Map.entry("days", "seconds"), Map.entry("weeks", "seconds"), Map.entry("kilobytes", "bytes"),
            Map.entry("megabytes", "bytes"), Map.entry("gigabytes", "bytes"), Map.entry("kilometers", "meters"),
            Map.entry("millimeters", "meters"), Map.entry("celsius", "kelvin"), Map.entry("percent", "ratio"));
    /** Abbreviations promlint refuses as a name part ({@code _ns}, {@code _ms}, {@code _sec}...). */
    private static final Set<String> ABBREVIATIONS = Set.of("s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb",
            "tb", "pb", "m", "h", "d");
    private static final Set<String> TYPE_WORDS = Set.of("counter", "gauge", "histogram", "summary");
    private static final Set<String> NOT_OURS = Set.of("jvm_", "process_", "system_");

    private PromLint() {
    }

    /** The problems of {@code exposition}, given the {@code _max} series kept on purpose. */
    static List<String> check(String exposition, Set<String> keptMax) {
        Map<String, String> help = new LinkedHashMap<>();
        Map<String, String> type = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();
        for (String line : exposition.lines().toList()) {
            if (line.isBlank()) {
                continue;
            }
            if (line.startsWith("# HELP ") || line.startsWith("# TYPE ")) {
                String[] parts = line.substring(7).split(" ", 2);
                String text = parts.length > 1 ? parts[1].strip() : "";
                (line.startsWith("# HELP ") ? help : type).put(parts[0], text);
                continue;
            }
            if (line.startsWith("#")) {
                continue;
            }
            Matcher m = SAMPLE.matcher(line);
            if (!m.matches()) {
                problems.add("not a sample line: " + line);
                continue;
            }
            String name = m.group(1);
            String family = familyOf(name, type);
            if (family == null) {
                problems.add(name + ": sample without a TYPE line");
                continue;
            }
            String kind = type.get(family);
            String labels = m.group(3) == null ? "" : m.group(3);
            Matcher l = LABEL.matcher(labels);
            int end = 0;
            while (l.find() && l.start() == end) {
                end = l.end();
                String label = l.group(1);
                if (!SNAKE.matcher(label).matches()) {
                    problems.add(name + ": label name not snake_case: " + label);
                }
                if (label.equals("le") && !kind.equals("histogram")) {
                    problems.add(name + ": label le on a " + kind + " (only histograms have le)");
                }
                if (label.equals("quantile") && !kind.equals("summary")) {
                    problems.add(name + ": label quantile on a " + kind + " (only summaries have quantile)");
                }
            }
            if (end != labels.length()) {
                problems.add(name + ": labels not parsed: {" + labels + "}");
            }
            if (family.endsWith("_info") && !m.group(4).equals("1.0") && !m.group(4).equals("1")) {
                problems.add(name + ": an _info sample must be 1, is " + m.group(4));
            }
        }
        for (Map.Entry<String, String> e : type.entrySet()) {
            problems.addAll(checkFamily(e.getKey(), e.getValue(), help.get(e.getKey()), keptMax));
        }
        for (String name : help.keySet()) {
            if (!type.containsKey(name)) {
                problems.add(name + ": HELP without TYPE");
            }
        }
        return problems;
    }

    /** The rules on one family's name, type and help. */
    static List<String> checkFamily(String name, String kind, String helpText, Set<String> keptMax) {
        List<String> problems = new ArrayList<>();
        if (!TYPES.contains(kind)) {
            problems.add(name + ": unknown type " + kind);
        }
        if (helpText == null || helpText.isBlank()) {
            problems.add(name + ": no HELP text");
        }
        if (!SNAKE.matcher(name).matches()) {
            problems.add(name + ": not snake_case");
        }
        if (NOT_OURS.stream().noneMatch(name::startsWith) && !name.startsWith("ptun_")) {
            problems.add(name + ": our own metrics start with ptun_");
        }
        if (kind.equals("counter") && !name.endsWith("_total")) {
            problems.add(name + ": a counter's name ends in _total");
        }
        if (!kind.equals("counter") && name.endsWith("_total")) {
            problems.add(name + ": only counters end in _total (this is a " + kind + ")");
        }
        if (!kind.equals("histogram") && !kind.equals("summary")
                && (name.endsWith("_bucket") || name.endsWith("_count") || name.endsWith("_sum"))) {
            problems.add(name + ": _bucket, _count and _sum are reserved for histograms and summaries");
        }
        List<String> parts = List.of(name.split("_"));
        for (String part : parts) {
            if (NON_BASE_UNITS.containsKey(part)) {
                problems.add(name + ": use base units: " + NON_BASE_UNITS.get(part) + ", not " + part);
            }
            if (ABBREVIATIONS.contains(part)) {
                problems.add(name + ": unit abbreviation _" + part + " (spell the base unit: _seconds, _bytes)");
            }
            if (TYPE_WORDS.contains(part)) {
                problems.add(name + ": the metric type (" + part + ") in the name");
            }
        }
        if (name.endsWith("_info") && !kind.equals("gauge")) {
            problems.add(name + ": an _info metric is a gauge");
        }
        if ((name.contains("timestamp") || name.contains("_since")) && !name.endsWith("_timestamp_seconds")) {
            problems.add(name + ": a timestamp is named ..._timestamp_seconds (seconds since the epoch)");
        }
        if (name.endsWith("_max") && !keptMax.contains(name)) {
            problems.add(name + ": a rolling _max series nobody asked for (see PrometheusRegistries)");
        }
        return problems;
    }

    /** The family a sample belongs to: its own name, or without a histogram's or summary's suffix. */
    private static String familyOf(String sample, Map<String, String> type) {
        if (type.containsKey(sample)) {
            return sample;
        }
        for (String suffix : List.of("_bucket", "_count", "_sum")) {
            if (sample.endsWith(suffix)) {
                String base = sample.substring(0, sample.length() - suffix.length());
                String kind = type.get(base);
                if ("histogram".equals(kind) || "summary".equals(kind)) {
                    return base;
                }
            }
        }
        return null;
    }
}
