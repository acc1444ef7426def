package dev.previewtunnel.bench;

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The printed table: one row per measured value, one column per path, then the ratios. */
final class Table {
    /** A table row: {@code key} is a dotted path into a path's result map; {@code ratio}: show the ratio columns. */
    record Row(String label, String unit, String key, int decimals, boolean ratio) {
        static Row section(String title) {
            return new Row(title, null, null, 0, false);
        }
    }

    /** A column per path, in the runner's order; {@link #HEADERS} names them. */
    static final List<String> PATHS = BenchRunner.ORDER;
    static final List<String> HEADERS = List.of("direct", "ssh -L", "DT ws", "DT aes", "tun ws", "tun wss",
            "mux ws", "mux wss", "mux CONN", "ingr+mux");
    /** Ratio columns: {numerator path, denominator path, header}; tunnel/peer beside tunnel/ssh and /direct. */
    static final List<String[]> RATIOS = List.of(new String[]{"ws", "ssh", "ws/ssh"},
            new String[]{"wss", "ssh", "wss/ssh"}, new String[]{"ws", "direct", "ws/dir"},
            new String[]{"wss", "direct", "wss/dir"}, new String[]{"ws", "dt", "ws/dt"},
            new String[]{"wss", "dt-aes", "wss/dtaes"},
            // the design's floor against the peer (finding 40)
            new String[]{"mux", "dt", "mux/dt"}, new String[]{"mux-tls", "dt-aes", "mux/dtaes"},
            // and with the CONNECT exchange in front of each stream (finding 52)
            new String[]{"mux-proxy", "dt", "muxc/dt"},
            // the ingress in front of the floor's environment side (finding 53)
            new String[]{"ws-floor", "dt", "ingm/dt"});

    static List<Row> rows(Config c) {
        String idleAt = c.idleSettle.toSeconds() + " s";
        String settledAt = c.idleSettled.toSeconds() + " s";
        List<Row> rows = new java.util.ArrayList<>(List.of(
                Row.section("1 single-stream bulk"),
                new Row("download (target->client)", "Gbit/s", "bulk.downloadGbps", 2, true),
                new Row("upload (client->target)", "Gbit/s", "bulk.uploadGbps", 2, true),
                new Row("cold download, first 256 MiB", "Gbit/s", "bulk.coldDownloadGbps", 2, true),
                new Row("cold upload, first 256 MiB", "Gbit/s", "bulk.coldUploadGbps", 2, true),
                new Row("CPU/GiB down, env | desk", "ms", "bulk.cpuMsPerGiBDownload.env", 0, true),
                new Row("", "ms", "bulk.cpuMsPerGiBDownload.desk", 0, true),
                new Row("CPU/GiB up, env | desk", "ms", "bulk.cpuMsPerGiBUpload.env", 0, true),
                new Row("", "ms", "bulk.cpuMsPerGiBUpload.desk", 0, true),
                Row.section("2 ping-pong 64 B, open stream"),
                new Row("round trip p50", "us", "pingpong.p50us", 1, true),
                new Row("round trip p99", "us", "pingpong.p99us", 1, true),
                new Row("added vs direct p50", "us", "pingpong.addedP50us", 1, true),
                new Row("added vs direct p99", "us", "pingpong.addedP99us", 1, true),
                new Row("CPU per round trip, env+desk", "us", "pingpong.cpuUsPerRoundTrip.sum", 1, true),
                Row.section("3 stream open (connect -> first target byte)"),
                new Row("p50", "ms", "open.p50ms", 3, true),
                new Row("p99", "ms", "open.p99ms", 3, true),
                new Row("CPU per open, env side", "us", "open.cpuUsPerOpen.env", 0, true),
                new Row("CPU per open, desk side", "us", "open.cpuUsPerOpen.desk", 0, true),
                Row.section("4 " + c.streams + " concurrent streams (tunnel: --pool " + c.pool + ")"),
                new Row("aggregate", "Gbit/s", "concurrent.aggregateGbps", 2, true),
                new Row("per stream min", "Mbit/s", "concurrent.perStreamMinMbps", 2, true),
                new Row("per stream median", "Mbit/s", "concurrent.perStreamMedianMbps", 2, true),
                new Row("per stream max", "Mbit/s", "concurrent.perStreamMaxMbps", 2, true),
                new Row("time to open all", "s", "concurrent.openAllSeconds", 2, true),
                Row.section("5 head-of-line: " + c.holStreams + " streams + 1 pinger"),
                new Row("aggregate, no stalled stream", "Gbit/s", "hol.baseline.aggregateGbps", 2, true),
                new Row("aggregate, 1 stalled stream", "Gbit/s", "hol.stalled.aggregateGbps", 2, true),
                new Row("throughput change", "%", "hol.throughputChangePct", 1, false),
                new Row("ping p99, no stalled stream", "us", "hol.baseline.pingP99us", 0, true),
                new Row("ping p99, 1 stalled stream", "us", "hol.stalled.pingP99us", 0, true),
                new Row("ping p99 stalled/none", "x", "hol.pingP99Ratio", 2, false),
                Row.section("6 peak RSS (VmHWM); env = gateway | sshd | DT env-side | floor env, "
                        + "desk = ingress | ssh | DT desktop-side | floor desk"),
                new Row("env, during 4", "MiB", "concurrent.memory.envPeakRssMiB", 0, true),
                new Row("desk, during 4", "MiB", "concurrent.memory.deskPeakRssMiB", 0, true),
                new Row("env, during 5", "MiB", "hol.memory.envPeakRssMiB", 0, true),
                new Row("desk, during 5", "MiB", "hol.memory.deskPeakRssMiB", 0, true),
                new Row("env, slow reader", "MiB", "slowReader.memory.envPeakRssMiB", 0, true),
                new Row("desk, slow reader", "MiB", "slowReader.memory.deskPeakRssMiB", 0, true),
                new Row("env, idle (" + idleAt + ")", "MiB", "idleRss.envMiB", 0, true),
                new Row("desk, idle (" + idleAt + ")", "MiB", "idleRss.deskMiB", 0, true),
                new Row("env, idle (settled, " + settledAt + ")", "MiB", "idleRss.envSettledMiB", 0, true),
                new Row("desk, idle (settled, " + settledAt + ")", "MiB", "idleRss.deskSettledMiB", 0, true),
                new Row("gateway direct mem, peak (run)", "MiB", "concurrent.memory.envNmt.directPeakMiB", 1, false),
                new Row("ingress direct mem, peak (run)", "MiB", "concurrent.memory.deskNmt.directPeakMiB", 1, false),
                new Row("slow reader pace", "MiB/s", "slowReader.readerMiBps", 0, false),
                new Row("slow reader bytes read", "GiB", "slowReader.bytesRead", 2, false),
                Row.section("7 page load, Vite dev app, " + PageLoad.MODULES + " modules, cold browser cache")));
        rows.addAll(pageRows("page"));
        rows.add(Row.section("7b the same, after " + (c.pageWarm + c.pageLoads + c.pageSteadyWarm)
                + " earlier rounds of loads (JIT-warm gateway and ingress)"));
        rows.addAll(pageRows("pageSteady"));
        rows.addAll(List.of(
                Row.section("robustness (not an issue figure): close " + c.abortStreams + " busy streams at once"),
                new Row("tunnel connections lost", "count", "abort.connectionsLost", 0, false),
                new Row("next stream opened after", "ms", "abort.nextStreamAfterMs", 1, false)));
        return rows.stream()
                .filter(r -> c.abortStreams > 0 && c.figures.contains("abort") || !r.label().startsWith("robustness")
                        && (r.key() == null || !r.key().startsWith("abort.")))
                .filter(r -> c.pageSteadyWarm >= 0 || !r.label().startsWith("7b")
                        && (r.key() == null || !r.key().startsWith("pageSteady."))).toList();
    }

    /** Figure 7's rows for one series of page loads ({@code page} or {@code pageSteady} in a path's results). */
    private static List<Row> pageRows(String series) {
        return List.of(
                new Row("loadEventEnd median", "ms", series + ".loadMedianMs", 0, true),
                new Row("loadEventEnd min", "ms", series + ".loadMinMs", 0, true),
                new Row("loadEventEnd max", "ms", series + ".loadMaxMs", 0, true),
                new Row("CPU per load, Vite", "ms", series + ".viteCpuMsPerLoad", 0, true),
                new Row("CPU per load, env | desk", "ms", series + ".gatewayCpuMsPerLoad", 0, false),
                new Row("", "ms", series + ".ingressCpuMsPerLoad", 0, false));
    }

    static void print(PrintStream out, Map<String, Map<String, Object>> results,
                      Map<String, Map<String, Object>> relays, List<Map<String, Object>> targets,
                      Map<String, Object> notes, Config c) {
        StringBuilder sb = new StringBuilder();
        sb.append('\n');
        sb.append(String.format(Locale.ROOT, "%-32s %-6s", "figure", "unit"));
        for (String h : HEADERS) {
            sb.append(String.format(Locale.ROOT, " %9s", h));
        }
        for (String[] r : RATIOS) {
            sb.append(String.format(Locale.ROOT, " %9s", r[2]));
        }
        sb.append('\n');
        sb.append("-".repeat(32 + 7 + 10 * (HEADERS.size() + RATIOS.size()))).append('\n');
        for (Row row : rows(c)) {
            if (row.key() == null) {
                sb.append(row.label()).append('\n');
                continue;
            }
            sb.append(String.format(Locale.ROOT, "  %-30s %-6s", row.label(), row.unit()));
            for (String p : PATHS) {
                double v = value(results, p, row);
                sb.append(String.format(Locale.ROOT, " %9s", fmt(v, row.decimals())));
            }
            for (String[] r : RATIOS) {
                double a = value(results, r[0], row);
                double b = value(results, r[1], row);
                boolean ok = row.ratio() && !Double.isNaN(a) && !Double.isNaN(b) && b != 0;
                sb.append(String.format(Locale.ROOT, " %9s", ok ? String.format(Locale.ROOT, "%.2fx", a / b) : ""));
            }
            sb.append('\n');
        }
        if (results.values().stream().anyMatch(r -> r.containsKey("rounds"))) {
            appendRounds(sb, results, c.rounds);
        }
        if (!relays.isEmpty()) {
            appendPageRelays(sb, results.get("direct"), relays);
        }
        appendPageMuxFloor(sb, results);
        appendPageSplit(sb, results);
        for (String issue : List.of("6", "21")) {
            sb.append('\n').append("targets (issue ").append(issue).append(issue.equals("21")
                    ? ", against the Dev Tunnels peer of the same run):\n" : "):\n");
            for (Map<String, Object> t : targets) {
                if (issue.equals(t.get("issue"))) {
                    sb.append(String.format(Locale.ROOT, "  [%s] %s: %s%n", t.get("status"), t.get("target"),
                            t.get("measured")));
                }
            }
        }
        if (!notes.isEmpty()) {
            sb.append("notes: ").append(notes).append('\n');
        }
        out.print(sb);
        out.flush();
    }

    /** Figures 1-3's values per round, whose medians the table shows ({@link Rounds}). */
    static final List<Row> ROUND_ROWS = List.of(
            new Row("download", "Gbit/s", "bulk.downloadGbps", 2, true),
            new Row("upload", "Gbit/s", "bulk.uploadGbps", 2, true),
            new Row("ping-pong p50", "us", "pingpong.p50us", 1, true),
            new Row("open p50", "ms", "open.p50ms", 3, true),
            new Row("open p99", "ms", "open.p99ms", 3, true));

    /** Every round's figures 1-3 with the tunnel/peer ratios of that round, so that the spread shows. */
    private static void appendRounds(StringBuilder sb, Map<String, Map<String, Object>> results, int rounds) {
        List<String[]> ratios = RATIOS.stream().filter(r -> r[1].startsWith("dt")).toList();
        sb.append(String.format(Locale.ROOT, "%-39s", "1-3 per round (above: their medians)"));
        HEADERS.forEach(h -> sb.append(String.format(Locale.ROOT, " %9s", h)));
        ratios.forEach(r -> sb.append(String.format(Locale.ROOT, " %9s", r[2])));
        sb.append('\n');
        for (Row row : ROUND_ROWS) {
            if (!anyRoundValue(results, rounds, row.key())) {
                continue; // a figure that --figures left out
            }
            for (int i = 0; i < rounds; i++) {
                sb.append(String.format(Locale.ROOT, "  %-30s %-6s", row.label() + ", round " + (i + 1), row.unit()));
                for (String p : PATHS) {
                    sb.append(String.format(Locale.ROOT, " %9s", fmt(roundValue(results, p, i, row.key()),
                            row.decimals())));
                }
                for (String[] r : ratios) {
                    sb.append(String.format(Locale.ROOT, " %9s", ratio(roundValue(results, r[0], i, row.key()),
                            roundValue(results, r[1], i, row.key()))));
                }
                sb.append('\n');
            }
        }
    }

    private static boolean anyRoundValue(Map<String, Map<String, Object>> results, int rounds, String key) {
        for (String p : PATHS) {
            for (int i = 0; i < rounds; i++) {
                if (!Double.isNaN(roundValue(results, p, i, key))) {
                    return true;
                }
            }
        }
        return false;
    }

    /** A value of round {@code i} (0 = the first) of a path, or NaN. */
    static double roundValue(Map<String, Map<String, Object>> results, String path, int i, String key) {
        Map<String, Object> r = results.get(path);
        if (r == null || !(r.get("rounds") instanceof List<?> rounds) || i >= rounds.size()
                || !(rounds.get(i) instanceof Map<?, ?> round)) {
            return Double.NaN;
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> values = (Map<String, Object>) round;
        return num(values, key);
    }

    /**
     * Figure 7's floor (not an issue figure): the same rounds' loads through one and two nginx HTTP proxies next to
     * the direct ones, with nginx's CPU per load (both processes for two).
     */
    private static void appendPageRelays(StringBuilder sb, Map<String, Object> direct,
                                         Map<String, Map<String, Object>> relays) {
        Map<String, Object> one = relays.get("nginx1");
        Map<String, Object> two = relays.get("nginx2");
        sb.append(String.format(Locale.ROOT, "%-39s %9s %9s %9s %9s %9s%n",
                "7, 7b floor: nginx as HTTP proxy, same rounds", "direct", "1 proxy", "2 proxies", "1/dir", "2/dir"));
        for (String series : List.of("page", "pageSteady")) {
            if (direct == null || !(direct.get(series) instanceof Map)) {
                continue;
            }
            double cpuOne = num(one, series + ".ingressCpuMsPerLoad");
            double cpuTwo = num(two, series + ".ingressCpuMsPerLoad") + num(two, series + ".gatewayCpuMsPerLoad");
            appendFloorSeries(sb, series, "nginx", num(direct, series + ".loadMedianMs"),
                    num(one, series + ".loadMedianMs"), num(two, series + ".loadMedianMs"), cpuOne, cpuTwo);
        }
    }

    /**
     * Figure 7 through the design's floor ({@code mux}: Vite's port forwarded over ws://, no HTTP proxy, grants or
     * audit), beside the tunnel over ws:// and direct in the same rounds (finding 61); only when mux loaded pages.
     */
    private static void appendPageMuxFloor(StringBuilder sb, Map<String, Map<String, Object>> results) {
        Map<String, Object> direct = results.get("direct");
        Map<String, Object> mux = results.get("mux");
        if (direct == null || mux == null || !(mux.get("page") instanceof Map)) {
            return;
        }
        Map<String, Object> ws = results.getOrDefault("ws", Map.of());
        sb.append(String.format(Locale.ROOT, "%-39s %9s %9s %9s %9s %9s%n",
                "7, 7b floor: mux ws, a port forward", "direct", "mux ws", "tun ws", "mux/dir", "ws/dir"));
        for (String series : List.of("page", "pageSteady")) {
            if (!(mux.get(series) instanceof Map)) {
                continue;
            }
            double cpuMux = num(mux, series + ".ingressCpuMsPerLoad") + num(mux, series + ".gatewayCpuMsPerLoad");
            double cpuWs = num(ws, series + ".ingressCpuMsPerLoad") + num(ws, series + ".gatewayCpuMsPerLoad");
            appendFloorSeries(sb, series, "env+desk", num(direct, series + ".loadMedianMs"),
                    num(mux, series + ".loadMedianMs"), num(ws, series + ".loadMedianMs"), cpuMux, cpuWs);
        }
    }

    /**
     * Figure 7 split between the tunnel's two programs (finding 63): the floor's port forward ({@code mux}), the
     * ingress in front of the floor's environment side ({@code ws-floor}: plus the HTTP proxy) and the tunnel
     * ({@code ws}: plus the gateway), each side's CPU per load on a line of its own; only when ws-floor loaded pages.
     */
    private static void appendPageSplit(StringBuilder sb, Map<String, Map<String, Object>> results) {
        Map<String, Object> direct = results.get("direct");
        Map<String, Object> floor = results.get("ws-floor");
        if (direct == null || floor == null || !(floor.get("page") instanceof Map)) {
            return;
        }
        Map<String, Object> mux = results.getOrDefault("mux", Map.of());
        Map<String, Object> ws = results.getOrDefault("ws", Map.of());
        sb.append(String.format(Locale.ROOT, "%-39s %9s %9s %9s %9s %9s %9s %9s%n",
                "7, 7b split: + HTTP proxy, + gateway", "direct", "mux ws", "ingr+mux", "tun ws", "mux/dir",
                "ingm/dir", "ws/dir"));
        for (String series : List.of("page", "pageSteady")) {
            if (!(floor.get(series) instanceof Map)) {
                continue;
            }
            String name = series.equals("page") ? "7 " : "7b";
            double d = num(direct, series + ".loadMedianMs");
            double[] medians = {num(mux, series + ".loadMedianMs"), num(floor, series + ".loadMedianMs"),
                    num(ws, series + ".loadMedianMs")};
            sb.append(String.format(Locale.ROOT, "  %-30s %-6s %9s %9s %9s %9s %9s %9s %9s%n",
                    name + " loadEventEnd median", "ms", fmt(d, 0), fmt(medians[0], 0), fmt(medians[1], 0),
                    fmt(medians[2], 0), ratio(medians[0], d), ratio(medians[1], d), ratio(medians[2], d)));
            for (String[] side : new String[][]{{"env", "gatewayCpuMsPerLoad"}, {"desk", "ingressCpuMsPerLoad"}}) {
                String key = series + "." + side[1];
                sb.append(String.format(Locale.ROOT, "  %-30s %-6s %9s %9s %9s %9s%n",
                        name + " CPU per load, " + side[0], "ms", "-", fmt(num(mux, key), 0),
                        fmt(num(floor, key), 0), fmt(num(ws, key), 0)));
            }
        }
    }

    /** One series of a figure-7 floor block: the medians of direct and two paths with their ratios, then CPU. */
    private static void appendFloorSeries(StringBuilder sb, String series, String cpuOf, double direct, double a,
                                          double b, double cpuA, double cpuB) {
        String name = series.equals("page") ? "7 " : "7b";
        sb.append(String.format(Locale.ROOT, "  %-30s %-6s %9s %9s %9s %9s %9s%n", name + " loadEventEnd median",
                "ms", fmt(direct, 0), fmt(a, 0), fmt(b, 0), ratio(a, direct), ratio(b, direct)));
        sb.append(String.format(Locale.ROOT, "  %-30s %-6s %9s %9s %9s%n", name + " CPU per load, " + cpuOf, "ms",
                "-", fmt(cpuA, 0), fmt(cpuB, 0)));
    }

    private static String ratio(double a, double b) {
        return Double.isNaN(a) || Double.isNaN(b) || b == 0 ? "" : String.format(Locale.ROOT, "%.2fx", a / b);
    }

    private static double value(Map<String, Map<String, Object>> results, String path, Row row) {
        Map<String, Object> r = results.get(path);
        if (r == null) {
            return Double.NaN;
        }
        double v = num(r, row.key());
        if (row.key().endsWith("bytesRead") && !Double.isNaN(v)) {
            v = v / (1L << 30);
        }
        return v;
    }

    static String fmt(double v, int decimals) {
        if (Double.isNaN(v)) {
            return "-";
        }
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }

    /** The number at a dotted key in nested maps, or NaN. */
    static double num(Map<String, Object> m, String key) {
        Object cur = m;
        for (String part : key.split("\\.")) {
            if (!(cur instanceof Map<?, ?> map)) {
                return Double.NaN;
            }
            cur = map.get(part);
        }
        return cur instanceof Number n ? n.doubleValue() : Double.NaN;
    }
}
