package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.previewtunnel.spikes.lab.LabProcess;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * The benchmark: one run measures every figure for direct, {@code ssh -L}, tunnel over {@code ws://} and tunnel over
 * {@code wss://}, prints a table with absolute numbers and the ratios, checks the targets, and writes JSON.
 * See docs/performance.md. Run it with {@code bench/run.sh}.
 */
public final class BenchRunner {
    private static final List<String> ORDER = List.of("direct", "ssh", "ws", "wss");

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
        Config config = Config.parse(args);
        int code = run(config, System.out);
        System.exit(code);
    }

    /** Runs everything; returns 0 when every figure was measured (targets missed are reported, not failures). */
    static int run(Config c, PrintStream out) throws Exception {
        CURRENT.set(c);
        Map<String, Object> doc = new LinkedHashMap<>();
        if (c.waitIdleSeconds > 0) {
            waitIdle(c.waitIdleSeconds, out);
        }
        doc.put("startedAt", Instant.now().toString());
        doc.put("machine", machine());
        doc.put("loadAverageAtStart", read(Path.of("/proc/loadavg")));
        double load = loadAverage();
        if (load > 1.5) {
            log(out, String.format(Locale.ROOT, "WARNING: 1-minute load average is %.1f on %d CPUs: something else "
                    + "is running and the numbers will be noisy (--wait-idle N waits for a quiet machine)", load,
                    Runtime.getRuntime().availableProcessors()));
        }
        doc.put("config", configJson(c));
        Map<String, Map<String, Object>> results = new LinkedHashMap<>();
        Map<String, Object> notes = new LinkedHashMap<>();
        Map<String, Map<String, Object>> relayResults = new LinkedHashMap<>();
        List<String> failures = new ArrayList<>();
        long t0 = System.nanoTime();
        try (Lab lab = new Lab(c)) {
            log(out, "setting up in " + lab.dir + " (target, keys, token, grants, certificate)");
            lab.start();
            if (lab.browser != null) {
                notes.put("page", "Chromium " + lab.browser.version() + ", Vite dev server, " + PageLoad.MODULES
                        + " modules");
            } else {
                notes.put("page", "figure 7 skipped: " + lab.pageSkipReason);
            }
            List<Lab.Tunnel> keptForPage = new ArrayList<>();
            try {
                for (String path : ORDER) {
                    if (!c.paths.contains(path)) {
                        continue;
                    }
                    log(out, "measuring " + path);
                    try {
                        results.put(path, measurePath(lab, path, notes, keptForPage, out));
                    } catch (Exception e) {
                        failures.add(path + ": " + e);
                        log(out, "FAILED " + path + ": " + e);
                        e.printStackTrace(out);
                    }
                }
                pagePhase(lab, results, keptForPage, relayResults, notes, out);
            } finally {
                keptForPage.forEach(Lab.Tunnel::close);
            }
        } finally {
            LabProcess.destroyAll();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        doc.put("loadAverageAtEnd", read(Path.of("/proc/loadavg")));
        derive(results);
        doc.put("notes", notes);
        doc.put("results", results);
        if (!relayResults.isEmpty()) {
            doc.put("pageRelays", relayResults);
        }
        List<Map<String, Object>> targets = Targets.check(results);
        doc.put("targets", targets);
        failures.addAll(FIGURE_FAILURES);
        FIGURE_FAILURES.clear();
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
     * Every figure but the page load for one path. A tunnel that figure 7 will load pages through is left running
     * in {@code keptForPage} (warm, as a long-running ingress is) for {@link #pagePhase}.
     */
    private static Map<String, Object> measurePath(Lab lab, String path, Map<String, Object> notes,
                                                   List<Lab.Tunnel> keptForPage, PrintStream out) throws Exception {
        Config c = lab.config;
        switch (path) {
            case "direct" -> {
                return measure(lab.directRoute(), c, null, out);
            }
            case "ssh" -> {
                try (Lab.Ssh ssh = lab.startSsh()) {
                    notes.put("ssh", ssh.version() + ", cipher " + ssh.cipher() + " (OpenSSH defaults)");
                    Map<String, Object> r = measure(ssh.route(), c, new MemWatch(ssh.sshd().process(), ssh.ssh(), false, false), out);
                    if (c.abortStreams > 0 && c.figures.contains("abort")) {
                        step(out, ssh.route(), "robustness: abort " + c.abortStreams + " busy streams");
                        r.put("abort", AbortProbe.run(ssh.route(), c, () -> ssh.ssh().process().isAlive() ? 0 : 1));
                    }
                    return r;
                }
            }
            case "ws", "wss" -> {
                Lab.Tunnel t = lab.startTunnel(path.equals("wss"));
                boolean keep = false;
                try {
                    notes.put("transport", t.gatewayTransport());
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("idleRss", Map.of("envMiB", MemWatch.mib(Mem.rssKib(t.gateway().pid())),
                            "deskMiB", MemWatch.mib(Mem.rssKib(t.ingress().pid()))));
                    r.putAll(measure(t.route(), c, new MemWatch(t.gateway(), t.ingress(), true, c.nmt), out));
                    if (c.abortStreams > 0 && c.figures.contains("abort")) {
                        step(out, t.route(), "robustness: abort " + c.abortStreams + " busy streams");
                        r.put("abort", AbortProbe.run(t.route(), c, () -> countLines(t.ingress(),
                                "tunnel connection", " lost")));
                    }
                    if (lab.browser != null && c.figures.contains("page")) {
                        keptForPage.add(t); // its log is checked after the page loads
                        keep = true;
                    } else {
                        putLogErrors(r, t);
                    }
                    return r;
                } finally {
                    if (!keep) {
                        t.close();
                    }
                }
            }
            default -> throw new IllegalArgumentException("unknown path " + path);
        }
    }

    interface Figure {
        Map<String, Object> run() throws Exception;
    }

    private static Map<String, Object> measure(Route route, Config c, MemWatch mem, PrintStream out) {
        Map<String, Object> r = new LinkedHashMap<>();
        // CPU the path's own processes spend per unit of work: robust to a busy machine, unlike times.
        figure(r, "bulk", out, route, "1 bulk", () -> BulkFigure.measure(route, c, mem));
        figure(r, "pingpong", out, route, "2 ping-pong", () -> PingPongFigure.measure(route, c, mem));
        figure(r, "open", out, route, "3 stream open", () -> StreamOpenFigure.measure(route, c, mem));
        // From here on in order of growing memory needs: RSS rarely shrinks once touched, so each phase's peak
        // (VmHWM is reset at its start) is its own only if no earlier phase needed more.
        if (mem != null) {
            figure(r, "slowReader", out, route, "6 slow reader", () -> SlowReaderFigure.measure(route, c, mem));
        }
        figure(r, "hol", out, route, "5 head-of-line", () -> HeadOfLineFigure.measure(route, c, mem));
        figure(r, "concurrent", out, route, "4 " + c.streams + " streams",
                () -> ConcurrentStreamsFigure.measure(route, c, mem));
        return r;
    }

    /**
     * Figure 7, when its prerequisites are there (see {@link PageLoad}), after every other figure: page loads
     * straight to Vite and through each kept tunnel, interleaved (one load per path in turn, the first path
     * rotating), so that whatever drifts during a run (Vite's and Chromium's own warm-up, other load on a shared
     * machine) falls on every path alike. Measured per path in its own phase, the ratio moved by up to 0.5x from
     * run to run (docs/performance.md, finding 18). With direct loads measured, the same rounds also load through
     * one and two nginx HTTP proxies ({@link PageRelays}, results in {@code relayResults}): what any proxy hop
     * costs on this machine (finding 20).
     */
    private static void pagePhase(Lab lab, Map<String, Map<String, Object>> results, List<Lab.Tunnel> tunnels,
                                  Map<String, Map<String, Object>> relayResults, Map<String, Object> notes,
                                  PrintStream out) {
        Config c = lab.config;
        if (lab.browser == null || !c.figures.contains("page")) {
            return;
        }
        List<String> keys = new ArrayList<>();
        List<PageLoad.Via> vias = new ArrayList<>();
        if (results.containsKey("direct")) {
            keys.add("direct");
            vias.add(PageLoad.Via.DIRECT);
        }
        for (Lab.Tunnel t : tunnels) {
            keys.add(t.key());
            vias.add(new PageLoad.Via(t.proxy(), t.username(), t.password(), t.gateway(), t.ingress()));
        }
        if (keys.isEmpty()) {
            return;
        }
        PageRelays relays = null;
        if (c.pageRelays && results.containsKey("direct")) {
            String[] why = new String[1];
            try {
                relays = PageRelays.start(lab.dir, lab.vitePort, why);
            } catch (RuntimeException | AssertionError e) {
                why[0] = "nginx did not start: " + e.getMessage();
            }
            if (relays == null) {
                notes.put("pageRelays", "skipped: " + why[0]);
                FIGURE_FAILURES.add("page relays: " + why[0] + " (--no-page-relays skips them)");
            } else {
                for (String key : PageRelays.KEYS) {
                    keys.add(key);
                    relayResults.put(key, new LinkedHashMap<>());
                }
                vias.addAll(relays.vias());
            }
        }
        try {
            loadPages(lab, keys, vias, key -> results.containsKey(key) ? results.get(key) : relayResults.get(key),
                    out);
        } finally {
            if (relays != null) {
                relays.close();
            }
        }
        for (Lab.Tunnel t : tunnels) {
            putLogErrors(results.get(t.key()), t);
        }
    }

    /** Figure 7's series (and 7b's), each path's under its key in the map {@code sink} gives for it. */
    private static void loadPages(Lab lab, List<String> keys, List<PageLoad.Via> vias,
                                  Function<String, Map<String, Object>> sink, PrintStream out) {
        Config c = lab.config;
        log(out, "  page loads (Vite, " + PageLoad.MODULES + " modules), interleaved: " + String.join(", ", keys));
        String url = "http://localhost:" + lab.vitePort + "/";
        try {
            Map<String, Map<String, Object>> pages = lab.browser.measureInterleaved(url, vias, keys, c.pageWarm,
                    c.pageLoads, lab.vite);
            pages.forEach((key, page) -> sink.apply(key).put("page", page));
            if (c.pageSteadyWarm >= 0) {
                // The same loads again once the tunnel's JVMs have compiled their request path (finding 19):
                // the first series shows what a freshly started ingress and gateway give, this one what a
                // long-running pair gives.
                int before = c.pageWarm + c.pageLoads + c.pageSteadyWarm;
                log(out, "  page loads again after " + before + " earlier rounds");
                Map<String, Map<String, Object>> steady = lab.browser.measureInterleaved(url, vias, keys,
                        c.pageSteadyWarm, c.pageLoads, lab.vite);
                steady.forEach((key, page) -> {
                    page.put("roundsBefore", before);
                    sink.apply(key).put("pageSteady", page);
                });
            }
        } catch (RuntimeException e) {
            log(out, "  FAILED page loads: " + e);
            for (String key : keys) {
                sink.apply(key).putIfAbsent("page", Map.of("error", String.valueOf(e)));
                if (c.pageSteadyWarm >= 0) {
                    sink.apply(key).putIfAbsent("pageSteady", Map.of("error", String.valueOf(e)));
                }
            }
            FIGURE_FAILURES.add("page loads: " + e);
        }
    }

    /** The tunnel's WARN/ERROR log lines, if any, under {@code logErrors}. */
    private static void putLogErrors(Map<String, Object> r, Lab.Tunnel t) {
        String gwErr = errors(t.gateway());
        String inErr = errors(t.ingress());
        if (!gwErr.isEmpty() || !inErr.isEmpty()) {
            r.put("logErrors", Map.of("gateway", gwErr, "ingress", inErr));
        }
    }

    /** Runs one figure; a failure is recorded in its place (and in the failures list) and the run goes on. */
    private static void figure(Map<String, Object> r, String key, PrintStream out, Route route, String what,
                               Figure f) {
        String name = key.equals("slowReader") ? "slow" : key;
        if (!CURRENT.get().figures.contains(name)) {
            return;
        }
        step(out, route, what);
        try {
            r.put(key, f.run());
        } catch (Exception e) {
            log(out, "  FAILED " + route.label + " " + what + ": " + e);
            Map<String, Object> err = new LinkedHashMap<>();
            err.put("error", String.valueOf(e));
            r.put(key, err);
            FIGURE_FAILURES.add(route.key + " " + what + ": " + e);
        }
    }

    private static final List<String> FIGURE_FAILURES = new java.util.concurrent.CopyOnWriteArrayList<>();
    private static final java.util.concurrent.atomic.AtomicReference<Config> CURRENT =
            new java.util.concurrent.atomic.AtomicReference<>(new Config());

    /** Lines of a process's log containing both strings. */
    private static long countLines(LabProcess p, String a, String b) {
        try (var lines = Files.lines(p.log(), StandardCharsets.UTF_8)) {
            return lines.filter(l -> l.contains(a) && l.contains(b)).count();
        } catch (IOException | java.io.UncheckedIOException e) {
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
            if (pp != null) {
                pp.put("addedP50us", Stats.round((double) pp.get("p50us") - d50, 1));
                pp.put("addedP99us", Stats.round((double) pp.get("p99us") - d99, 1));
            }
        }
    }

    static double loadAverage() {
        try {
            return Double.parseDouble(read(Path.of("/proc/loadavg")).split("\\s+")[0]);
        } catch (RuntimeException e) {
            return 0;
        }
    }

    /** Waits (at most {@code seconds}) until the 1-minute load average falls below 1. */
    private static void waitIdle(long seconds, PrintStream out) throws InterruptedException {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        boolean said = false;
        while (loadAverage() >= 1.0 && System.nanoTime() < deadline) {
            if (!said) {
                log(out, "waiting up to " + seconds + " s for the machine to go quiet (load " + loadAverage() + ")");
                said = true;
            }
            Thread.sleep(5_000);
        }
    }

    private static void step(PrintStream out, Route route, String what) {
        log(out, "  " + route.label + ": " + what);
    }

    private static void log(PrintStream out, String line) {
        out.println("[bench " + java.time.LocalTime.now().withNano(0) + "] " + line);
        out.flush();
    }

    static Map<String, Object> machine() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("nproc", Runtime.getRuntime().availableProcessors());
        m.put("cpu", firstMatch(Path.of("/proc/cpuinfo"), "model name", l -> l.replaceAll("^[^:]*:\\s*", "")));
        m.put("memTotal", firstMatch(Path.of("/proc/meminfo"), "MemTotal", l -> l.replaceAll("^[^:]*:\\s*", "")));
        m.put("kernel", read(Path.of("/proc/sys/kernel/osrelease")));
        m.put("os", firstMatch(Path.of("/etc/os-release"), "PRETTY_NAME", l -> l.replaceAll("^[^=]*=\"?|\"$", "")));
        m.put("jdk", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        return m;
    }

    private static String firstMatch(Path file, String prefix, Function<String, String> f) {
        try {
            return Files.readAllLines(file).stream().filter(l -> l.startsWith(prefix)).findFirst().map(f)
                    .orElse("?");
        } catch (IOException e) {
            return "?";
        }
    }

    private static String read(Path file) {
        try {
            // readAllLines, not readString: /proc/sys files report a size that readString trusts.
            return String.join(" ", Files.readAllLines(file)).strip();
        } catch (IOException e) {
            return "?";
        }
    }

    private static Map<String, Object> configJson(Config c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("smoke", c.smoke);
        m.put("paths", c.paths);
        m.put("figures", c.figures);
        m.put("targetPorts", c.targetPorts);
        m.put("pool", c.pool);
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
        m.put("serverJvmOptions", c.serverJvmOptions);
        m.put("gatewayJvmExtra", c.gatewayJvmExtra);
        m.put("ingressJvmExtra", c.ingressJvmExtra);
        return m;
    }
}
