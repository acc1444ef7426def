package dev.previewtunnel.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Figure 7, when its prerequisites are there (see {@link PageLoad}), after every other figure: page loads
 * straight to Vite and through each kept tunnel, interleaved (one load per path in turn, the first path
 * rotating), so that whatever drifts during a run (Vite's and Chromium's own warm-up, other load on a shared
 * machine) falls on every path alike. Measured per path in its own phase, the ratio moved by up to 0.5x from
 * run to run (docs/performance.md, finding 18). With direct loads measured, the same rounds also load through
 * one and two nginx HTTP proxies ({@link PageRelays}, results in {@code relayResults}): what any proxy hop
 * costs on this machine (finding 20).
 */
final class PagePhase {
    private PagePhase() {
    }

    /** Puts each path's page figures into its results; what failed goes into {@code failures} too. */
    static void run(Lab lab, Map<String, Map<String, Object>> results, List<Lab.PagePath> tunnels,
                    Map<String, Map<String, Object>> relayResults, Map<String, Object> notes,
                    List<String> failures, PrintStream out) {
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
        for (Lab.PagePath t : tunnels) {
            keys.add(t.key());
            vias.add(t.pageVia());
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
                failures.add("page relays: " + why[0] + " (--no-page-relays skips them)");
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
                    failures, out);
        } finally {
            if (relays != null) {
                relays.close();
            }
        }
        for (Lab.PagePath t : tunnels) {
            t.putLogErrors(results.get(t.key()));
        }
    }

    /** Figure 7's series (and 7b's), each path's under its key in the map {@code sink} gives for it. */
    private static void loadPages(Lab lab, List<String> keys, List<PageLoad.Via> vias,
                                  Function<String, Map<String, Object>> sink, List<String> failures,
                                  PrintStream out) {
        Config c = lab.config;
        RunLog.log(out, "  page loads (Vite, " + PageLoad.MODULES + " modules), interleaved: "
                + String.join(", ", keys));
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
                RunLog.log(out, "  page loads again after " + before + " earlier rounds");
                Map<String, Map<String, Object>> steady = lab.browser.measureInterleaved(url, vias, keys,
                        c.pageSteadyWarm, c.pageLoads, lab.vite);
                steady.forEach((key, page) -> {
                    page.put("roundsBefore", before);
                    sink.apply(key).put("pageSteady", page);
                });
            }
        } catch (RuntimeException e) {
            RunLog.log(out, "  FAILED page loads: " + e);
            for (String key : keys) {
                sink.apply(key).putIfAbsent("page", Map.of("error", String.valueOf(e)));
                if (c.pageSteadyWarm >= 0) {
                    sink.apply(key).putIfAbsent("pageSteady", Map.of("error", String.valueOf(e)));
                }
            }
            failures.add("page loads: " + e);
        }
    }
}
