package dev.previewtunnel.ingress.browser;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What browser-wide {@code Fetch} interception costs a page load: a page with {@value TestTarget#SUBRESOURCES}
 * images through {@link AuthenticatingProxy}, loaded in interleaved rounds with interception on and off (the
 * credential already in Chromium's proxy auth cache). A measurement, not a timed test: run it by name
 * ({@code -Dtest=InterceptionCostMeasurement}); it prints the medians and asserts only that every load was complete.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class InterceptionCostMeasurement {
    static final int ROUNDS = 6;
    static final int LOADS_PER_ROUND = 6;

    @TempDir
    Path dir;

    @Test
    void pageLoadWithAndWithoutInterception() throws Exception {
        try (TestTarget target = new TestTarget();
             AuthenticatingProxy proxy = new AuthenticatingProxy(0, BrowserLauncherTest.USER, BrowserLauncherTest.PASSWORD);
             LaunchedBrowser browser = BrowserLauncher.launch(BrowserLauncherTest.CHROMIUM, dir.resolve("profile"),
                     proxy.address(), BrowserLauncherTest.USER, BrowserLauncherTest.PASSWORD,
                     BrowserLauncherTest.HEADLESS, List.of(URI.create("about:blank")), BrowserLauncherTest.WAIT)) {
            DevTools devTools = browser.devTools();
            String url = "http://localhost:" + target.port() + "/many";
            String page = pageSession(devTools);
            load(devTools, page, url); // warm-up: the first 407 is answered here
            ObjectNode everyRequest = DevTools.params().put("handleAuthRequests", true);
            everyRequest.putArray("patterns").addObject().put("urlPattern", "*");
            ObjectNode documentsOnly = DevTools.params().put("handleAuthRequests", true);
            documentsOnly.putArray("patterns").addObject().put("urlPattern", "*").put("resourceType", "Document");
            Mode all = new Mode("every request", () -> devTools.send("Fetch.enable", everyRequest));
            Mode documents = new Mode("documents only", () -> devTools.send("Fetch.enable", documentsOnly));
            Mode none = new Mode("no interception", () -> devTools.send("Fetch.disable", null));
            for (int r = 0; r < ROUNDS; r++) {
                for (Mode mode : List.of(all, documents, none)) {
                    mode.apply.run();
                    for (int i = 0; i < LOADS_PER_ROUND; i++) {
                        mode.loads.add(load(devTools, page, url));
                    }
                }
            }
            for (Mode mode : List.of(all, documents, none)) {
                List<Double> pages = mode.loads.stream().map(Load::page).toList();
                List<Double> images = mode.loads.stream().map(Load::image).toList();
                System.out.printf("%-15s: page load median %.1f ms, p90 %.1f ms; median image request %.1f ms"
                        + " (median over %d loads)%n", mode.name, pct(pages, 50), pct(pages, 90), pct(images, 50),
                        mode.loads.size());
            }
            System.out.printf("requests paused in all: %d%n", browser.answerer().pausedRequests());
        }
    }

    static String pageSession(DevTools devTools) {
        for (JsonNode t : devTools.send("Target.getTargets", null).path("targetInfos")) {
            if ("page".equals(t.path("type").asText())) {
                return devTools.send("Target.attachToTarget", DevTools.params()
                        .put("targetId", t.path("targetId").asText()).put("flatten", true)).path("sessionId").asText();
            }
        }
        throw new AssertionError("no page");
    }

    /** One page load: its load-event end and its median image request duration (ms). */
    record Load(double page, double image) {
    }

    /** An interception mode: how to switch to it, and the loads measured in it. */
    record Mode(String name, Runnable apply, List<Load> loads) {
        Mode(String name, Runnable apply) {
            this(name, apply, new ArrayList<>());
        }
    }

    /** Navigates and measures the load once every image has loaded. */
    static Load load(DevTools devTools, String session, String url) {
        devTools.send("Page.navigate", DevTools.params().put("url", url), session);
        String done = "(() => { const n = performance.getEntriesByType('navigation')[0];"
                + " const imgs = [...document.images]; return document.readyState === 'complete' && n && n.loadEventEnd > 0"
                + " && imgs.length === " + TestTarget.SUBRESOURCES + " && imgs.every(i => i.complete && i.naturalWidth > 0)"
                + " ? [n.loadEventEnd, (() => { const r = performance.getEntriesByType('resource')"
                + ".map(e => e.responseEnd - e.startTime).sort((a, b) => a - b); return r[r.length >> 1]; })()] : 0; })()";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() - deadline < 0) {
            JsonNode v = devTools.send("Runtime.evaluate", DevTools.params().put("expression", done)
                    .put("returnByValue", true), session).path("result").path("value");
            if (v.isArray()) {
                return new Load(v.get(0).asDouble(), v.get(1).asDouble());
            }
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
        assertEquals("complete", "not complete", "the page with its images did not load within 30 s");
        return null;
    }

    static double pct(List<Double> xs, int p) {
        List<Double> s = new ArrayList<>(xs);
        Collections.sort(s);
        return s.get(Math.min(s.size() - 1, s.size() * p / 100));
    }
}
