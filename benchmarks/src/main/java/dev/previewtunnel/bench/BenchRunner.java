package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.previewtunnel.spikes.lab.LabProcess;

import java.io.PrintStream;
import java.nio.file.Files;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The benchmark: one run measures every figure for direct, {@code ssh -L}, the Dev Tunnels peer without and with
 * its cipher ({@link DevTunnelsPeer}), tunnel over {@code ws://} and tunnel over {@code wss://}, and figures 1-3
 * and idle RSS for {@code mux-protocol} alone over each ({@link MuxFloor}, the design's floor), prints a table
 * with absolute numbers and the ratios, checks the issues' targets, and writes JSON. See docs/performance.md. Run
 * it with {@code bench/run.sh}.
 */
public final class BenchRunner {
    // The floor (mux, mux-tls, mux-proxy) last: the paths before it keep the order of runs 1-9 (docs/performance.md),
    // and the floor's of runs 10-23. ws-floor (not a default path: --paths or --smoke selects it) after them.
    static final List<String> ORDER = List.of("direct", "ssh", "dt", "dt-aes", "ws", "wss", "mux", "mux-tls",
            "mux-proxy", "ws-floor");

    private BenchRunner() {
    }

    public static void main(String[] args) throws Exception {
        List<String> list = new ArrayList<>(List.of(args));
        if (list.remove("--open-floor")) {
            // bench/open-floor.sh: the floor of figure 3 instead of the benchmark (it needs no project root).
            int root = list.indexOf("--root");
            if (root >= 0) {
                list.subList(root, Math.min(root + 2, list.size())).clear();
            }
            OpenFloor.main(list.toArray(String[]::new));
            return;
        }
        if (list.remove("--memory-floor")) {
            // bench/memory-floor.sh: the floor under figure 6's idle RSS (issue 21).
            MemoryFloor.main(list.toArray(String[]::new));
            return;
        }
        if (list.remove("--first-paint")) {
            // bench/first-paint.sh: issue 19's time from 'desktop-ingress open' to the first paint.
            FirstPaintBench.main(list.toArray(String[]::new));
            return;
        }
        Config config = Config.parse(args);
        int code = run(config, System.out);
        System.exit(code);
    }

    /** Runs everything; returns 0 when every figure was measured (targets missed are reported, not failures). */
    static int run(Config c, PrintStream out) throws Exception {
        Map<String, Object> doc = new LinkedHashMap<>();
        if (c.waitIdleSeconds > 0) {
            MachineInfo.waitIdle(c.waitIdleSeconds, out);
        }
        doc.put("startedAt", Instant.now().toString());
        doc.put("machine", MachineInfo.machine());
        doc.put("loadAverageAtStart", MachineInfo.loadAverageLine());
        double load = MachineInfo.loadAverage();
        if (load > 1.5) {
            RunLog.log(out, String.format(Locale.ROOT, "WARNING: 1-minute load average is %.1f on %d CPUs: "
                    + "something else is running and the numbers will be noisy (--wait-idle N waits for a quiet "
                    + "machine)", load, Runtime.getRuntime().availableProcessors()));
        }
        doc.put("config", configJson(c));
        Map<String, Map<String, Object>> results = new LinkedHashMap<>();
        Map<String, Object> notes = new LinkedHashMap<>();
        Map<String, Map<String, Object>> relayResults = new LinkedHashMap<>();
        List<String> failures = new ArrayList<>();
        List<String> figureFailures = new ArrayList<>();
        long t0 = System.nanoTime();
        try (Lab lab = new Lab(c)) {
            RunLog.log(out, "setting up in " + lab.dir + " (target, keys, token, grants, certificate)");
            lab.start();
            if (lab.browser != null) {
                notes.put("page", "Chromium " + lab.browser.version() + ", Vite dev server, " + PageLoad.MODULES
                        + " modules");
            } else {
                notes.put("page", "figure 7 skipped: " + lab.pageSkipReason);
            }
            List<Lab.PagePath> keptForPage = new ArrayList<>();
            List<String> freshForPage = new ArrayList<>();
            PathMeasurement paths = new PathMeasurement(lab, notes, figureFailures, out);
            try {
                List<Map<String, Map<String, Object>>> earlierRounds = earlierRounds(c, paths, failures, out);
                for (String path : ORDER) {
                    if (!c.paths.contains(path)) {
                        continue;
                    }
                    RunLog.log(out, "measuring " + path + (earlierRounds.isEmpty() ? ""
                            : " (round " + c.rounds + " of " + c.rounds + ", every figure)"));
                    try {
                        results.put(path, paths.measurePath(path, keptForPage, freshForPage));
                    } catch (Exception | AssertionError e) { // the lab's Sshd reports a failed start so
                        failures.add(path + ": " + e);
                        RunLog.log(out, "FAILED " + path + ": " + e);
                        e.printStackTrace(out);
                    }
                }
                Rounds.merge(results, earlierRounds);
                for (String path : freshForPage) {
                    startPeerForPage(lab, path, results.get(path), notes, keptForPage, figureFailures, out);
                }
                keptForPage.sort(Comparator.comparingInt(p -> ORDER.indexOf(p.key())));
                PagePhase.run(lab, results, keptForPage, relayResults, notes, figureFailures, out);
            } finally {
                keptForPage.forEach(Lab.PagePath::close);
            }
        } finally {
            LabProcess.destroyAll();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        doc.put("loadAverageAtEnd", MachineInfo.loadAverageLine());
        derive(results);
        doc.put("notes", notes);
        doc.put("results", results);
        if (!relayResults.isEmpty()) {
            doc.put("pageRelays", relayResults);
        }
        List<Map<String, Object>> targets = Targets.check(results);
        doc.put("targets", targets);
        failures.addAll(figureFailures);
        doc.put("failures", failures);
        doc.put("seconds", Stats.round(seconds, 1));
        Table.print(out, results, relayResults, targets, notes, c);
        out.printf(Locale.ROOT, "run took %.0f s; JSON: %s%n", seconds, c.jsonOut.toAbsolutePath());
        Files.createDirectories(c.jsonOut.toAbsolutePath().getParent());
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(c.jsonOut.toFile(), doc);
        if (!failures.isEmpty()) {
            out.println("failures: " + failures);
            return 1;
        }
        return 0;
    }

    /**
     * Rounds 1 to N-1 of figures 1-3 ({@link Rounds}), before the last round measures every figure: each path in
     * turn, started afresh and closed after. A path that fails a round is recorded and left out of that round.
     */
    private static List<Map<String, Map<String, Object>>> earlierRounds(Config c, PathMeasurement paths,
                                                                       List<String> failures, PrintStream out) {
        List<Map<String, Map<String, Object>>> rounds = new ArrayList<>();
        if (Rounds.FIGURES.stream().noneMatch(c.figures::contains)) {
            return rounds;
        }
        for (int round = 1; round < c.rounds; round++) {
            Map<String, Map<String, Object>> measured = new LinkedHashMap<>();
            for (String path : ORDER) {
                if (!c.paths.contains(path)) {
                    continue;
                }
                RunLog.log(out, "measuring " + path + " (round " + round + " of " + c.rounds + ", figures 1-3)");
                try {
                    measured.put(path, paths.measureRound(path, "-r" + round));
                } catch (Exception | AssertionError e) { // the lab's Sshd reports a failed start so
                    failures.add(path + " round " + round + ": " + e);
                    RunLog.log(out, "FAILED " + path + " round " + round + ": " + e);
                    e.printStackTrace(out);
                }
            }
            rounds.add(measured);
        }
        return rounds;
    }

    /** A fresh Dev Tunnels peer for figure 7, its figures' processes having been closed after them. */
    private static void startPeerForPage(Lab lab, String path, Map<String, Object> r, Map<String, Object> notes,
                                         List<Lab.PagePath> kept, List<String> failures, PrintStream out) {
        RunLog.log(out, "starting a fresh " + path + " peer for the page loads");
        try {
            DevTunnelsPeer peer = DevTunnelsPeer.start(lab, path.equals("dt-aes"), "-page");
            kept.add(peer);
            notes.put(path + "-page", peer.describe());
        } catch (RuntimeException e) {
            r.put("page", Map.of("error", "the peer for the page loads did not start: " + e));
            failures.add(path + " page: the peer did not start: " + e);
        }
    }

    /** Added latency (path minus direct) where direct was measured. */
    private static void derive(Map<String, Map<String, Object>> results) {
        Map<String, Object> direct = results.get("direct");
        if (direct == null) {
            return;
        }
        double d50 = Table.num(direct, "pingpong.p50us");
        double d99 = Table.num(direct, "pingpong.p99us");
        for (Map<String, Object> r : results.values()) {
            @SuppressWarnings("unchecked")
            Map<String, Object> pp = (Map<String, Object>) r.get("pingpong");
            // A failed figure holds only its error: no added latency then, rather than no table at all.
            double p50 = Table.num(r, "pingpong.p50us");
            double p99 = Table.num(r, "pingpong.p99us");
            if (pp != null && !Double.isNaN(p50 - d50) && !Double.isNaN(p99 - d99)) {
                pp.put("addedP50us", Stats.round(p50 - d50, 1));
                pp.put("addedP99us", Stats.round(p99 - d99, 1));
            }
        }
    }

    private static Map<String, Object> configJson(Config c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("smoke", c.smoke);
        m.put("paths", c.paths);
        m.put("figures", c.figures);
        m.put("targetPorts", c.targetPorts);
        m.put("pool", c.pool);
        m.put("rounds", c.rounds);
        m.put("bulkBytes", c.bulkBytes);
        m.put("bulkReps", c.bulkReps);
        m.put("pingCount", c.pingCount);
        m.put("openCount", c.openCount);
        m.put("streams", c.streams);
        m.put("holStreams", c.holStreams);
        m.put("abortStreams", c.abortStreams);
        m.put("pageWarm", c.pageWarm);
        m.put("pageLoads", c.pageLoads);
        m.put("pageSteadyWarm", c.pageSteadyWarm);
        m.put("pageRelays", c.pageRelays);
        m.put("windowMillis", c.streamsWindowMillis);
        m.put("slowBytesPerSecond", c.slowBytesPerSecond);
        m.put("slowBytes", c.slowBytes);
        m.put("slowMaxMillis", c.slowMaxMillis);
        m.put("idleSettleSeconds", c.idleSettle.toSeconds());
        m.put("idleSettledSeconds", c.idleSettled.toSeconds());
        m.put("serverJvmOptions", c.serverJvmOptions);
        m.put("gatewayJvmExtra", c.gatewayJvmExtra);
        m.put("ingressJvmExtra", c.ingressJvmExtra);
        m.put("ingressIoThreads", c.ingressIoThreads);
        return m;
    }
}
