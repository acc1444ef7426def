package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.ingress.browser.DevTools;
import dev.previewtunnel.spikes.lab.Chromium;
import dev.previewtunnel.spikes.lab.LabProcess;
import dev.previewtunnel.spikes.lab.Processes;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Figure 7: cold load of a Vite dev app of {@value #MODULES} ES modules in headless Chromium, straight to the dev
 * server or through the ingress. One Chromium for the whole run; every load gets a fresh browser context (empty
 * cache; for the tunnel, the ingress as its proxy with {@code <-loopback>}), so each load is cold for the browser,
 * while Vite's own transform cache is warm after the warm-up loads (the same for every path).
 *
 * <p>Proxy credentials: a priming request ({@code /prime.txt}, a static file outside the module graph) is answered
 * through DevTools {@code Fetch.authRequired}; then {@code Fetch} is disabled and the browser cache cleared, so the
 * measured load runs without any DevTools interception and Chromium answers the proxy from its auth cache, as a
 * browser whose user typed the credential once does. Direct loads take the same steps without a proxy.
 */
final class PageLoad implements AutoCloseable {
    static final int MODULES = 300;
    private static final int GROUPS = 20;

    private final Chromium chromium;
    private final DevTools cdp;
    private final Map<String, CompletableFuture<Void>> loaded = new ConcurrentHashMap<>();
    private final Map<String, String[]> credentials = new ConcurrentHashMap<>();

    private PageLoad(Chromium chromium) {
        this.chromium = chromium;
        this.cdp = chromium.cdp();
        cdp.on("Page.loadEventFired", (p, session) -> {
            CompletableFuture<Void> f = session == null ? null : loaded.get(session);
            if (f != null) {
                f.complete(null);
            }
        });
        cdp.on("Fetch.requestPaused", (p, session) ->
                cdp.sendAsync("Fetch.continueRequest", DevTools.params().put("requestId", p.get("requestId").asText()),
                        session));
        cdp.on("Fetch.authRequired", (p, session) -> {
            String[] cred = session == null ? null : credentials.get(session);
            ObjectNode answer = DevTools.params().put("requestId", p.get("requestId").asText());
            ObjectNode response = answer.putObject("authChallengeResponse");
            if (cred != null && "Proxy".equals(p.path("authChallenge").path("source").asText())) {
                response.put("response", "ProvideCredentials").put("username", cred[0]).put("password", cred[1]);
            } else {
                response.put("response", "CancelAuth");
            }
            cdp.sendAsync("Fetch.continueWithAuth", answer, session);
        });
    }

    /** Null when something figure 7 needs is missing (then the reason is in {@code why[0]}). */
    static Path viteNodeModules(Path root, String[] why) {
        Path nm = root.resolve("security-spikes/fixtures/vite-app/node_modules");
        if (!Files.isRegularFile(nm.resolve("vite/bin/vite.js"))) {
            why[0] = "no Vite: run 'npm ci' in security-spikes/fixtures/vite-app";
            return null;
        }
        for (String bin : List.of("node", "chromium")) {
            if (Processes.find(bin) == null) {
                why[0] = bin + " is not installed";
                return null;
            }
        }
        return nm;
    }

    /** Writes the app: index.html, src/main.js importing 20 groups of 15 modules (~2 KiB each), public/prime.txt. */
    static Path writeApp(Path dir, Path nodeModules) throws IOException {
        Path app = Files.createDirectories(dir.resolve("vite-app"));
        Files.writeString(app.resolve("index.html"), """
                <!doctype html>
                <html><head><meta charset="utf-8"><title>ptun bench</title></head>
                <body><div id="out">loading</div><script type="module" src="/src/main.js"></script></body></html>
                """);
        Files.createDirectories(app.resolve("public"));
        Files.writeString(app.resolve("public/prime.txt"), "prime\n");
        String filler = "x".repeat(1800);
        StringBuilder main = new StringBuilder();
        int perGroup = MODULES / GROUPS;
        for (int g = 0; g < GROUPS; g++) {
            Path gd = Files.createDirectories(app.resolve("src/g" + g));
            StringBuilder index = new StringBuilder();
            for (int m = 1; m < perGroup; m++) {
                Files.writeString(gd.resolve("m" + m + ".js"), "export const text = '" + filler + "';\n"
                        + "export function count() { return text.length > 0 ? 1 : 0; }\n");
                index.append("import { count as c").append(m).append(" } from './m").append(m).append(".js';\n");
            }
            index.append("export function count() { return 1");
            for (int m = 1; m < perGroup; m++) {
                index.append(" + c").append(m).append("()");
            }
            index.append("; }\n");
            Files.writeString(gd.resolve("index.js"), index);
            main.append("import { count as g").append(g).append(" } from './g").append(g).append("/index.js';\n");
        }
        main.append("const n = 0");
        for (int g = 0; g < GROUPS; g++) {
            main.append(" + g").append(g).append("()");
        }
        main.append(";\nwindow.__modules = n;\ndocument.getElementById('out').textContent = n + ' modules';\n");
        Files.writeString(app.resolve("src/main.js"), main);
        Files.createSymbolicLink(app.resolve("node_modules"), nodeModules.toAbsolutePath());
        return app;
    }

    static LabProcess startVite(Path app, int port, Path logDir) {
        LabProcess vite = LabProcess.start("vite", List.of("node",
                app.resolve("node_modules/vite/bin/vite.js").toString(),
                "--host", "127.0.0.1", "--port", String.valueOf(port), "--strictPort", "--clearScreen", "false"),
                app, null);
        try {
            vite.awaitPort(port, Duration.ofSeconds(60));
            return vite;
        } catch (AssertionError | RuntimeException e) {
            vite.close();
            throw new IllegalStateException("vite did not start: " + e.getMessage(), e);
        }
    }

    static PageLoad launch(Path dir) {
        return new PageLoad(Chromium.launch(List.of("--disable-extensions"), dir.resolve("chromium-profile")));
    }

    String version() {
        return chromium.version();
    }

    /**
     * How a load reaches Vite: straight ({@link #DIRECT}) or through a proxy (an ingress with a session's
     * credential, or a relay of {@link PageRelays} with none); the processes on the way, whose CPU per load is
     * reported: the environment side ({@code gateway}) and the desktop side ({@code ingress}), either may be null.
     * {@code url}, when not null, is loaded instead of the round's URL: a forwarded local port with no proxy (the
     * Dev Tunnels peer, {@link DevTunnelsPeer}).
     */
    record Via(InetSocketAddress proxy, String user, String password, LabProcess gateway, LabProcess ingress,
               String url) {
        static final Via DIRECT = new Via(null, null, null, null, null);

        Via(InetSocketAddress proxy, String user, String password, LabProcess gateway, LabProcess ingress) {
            this(proxy, user, password, gateway, ingress, null);
        }

        /** No proxy: {@code url} is a local port forwarded to Vite by {@code desk}'s side. */
        static Via direct(String url, LabProcess env, LabProcess desk) {
            return new Via(null, null, null, env, desk, url);
        }
    }

    /**
     * {@code warm} unmeasured rounds, then {@code count} measured rounds; a round loads {@code url} cold once per
     * path, the first path rotating from round to round. Load time = the navigation's loadEventEnd (module scripts
     * and all their imports included). Returns each path's figure under its key.
     */
    Map<String, Map<String, Object>> measureInterleaved(String url, List<Via> vias, List<String> keys, int warm,
                                                        int count, LabProcess vite) {
        int n = vias.size();
        List<List<Double>> ms = new ArrayList<>();
        List<List<Double>> wall = new ArrayList<>();
        // CPU per load of Vite and of the tunnel's two processes (one load runs at a time, so a long-lived
        // process's CPU during a load is that load's): on two shared vCPUs a page load is partly CPU-bound.
        List<long[]> cpu = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            ms.add(new ArrayList<>());
            wall.add(new ArrayList<>());
            cpu.add(new long[3]);
        }
        for (int i = 0; i < warm + count; i++) {
            for (int j = 0; j < n; j++) {
                int k = (i + j) % n;
                Via via = vias.get(k);
                long[] before = cpuMillis(vite, via);
                double[] one;
                try {
                    one = loadOnce(via.url() != null ? via.url() : url, via.proxy(), via.user(), via.password());
                } catch (RuntimeException e) { // say which path failed: the series of every path ends here
                    throw new IllegalStateException("round " + i + ", path " + keys.get(k) + ": " + e.getMessage(), e);
                }
                long[] after = cpuMillis(vite, via);
                if (i >= warm) {
                    ms.get(k).add(one[0]);
                    wall.get(k).add(one[1]);
                    for (int c = 0; c < 3; c++) {
                        cpu.get(k)[c] += after[c] - before[c];
                    }
                }
            }
        }
        Map<String, Map<String, Object>> out = new LinkedHashMap<>();
        for (int k = 0; k < n; k++) {
            double[] a = ms.get(k).stream().mapToDouble(Double::doubleValue).toArray();
            Map<String, Object> figure = new LinkedHashMap<>();
            figure.put("modules", MODULES);
            figure.put("loads", count);
            figure.put("interleavedWith", keys);
            figure.put("loadMedianMs", Stats.round(Stats.median(a), 1));
            figure.put("loadMinMs", Stats.round(Stats.min(a), 1));
            figure.put("loadMaxMs", Stats.round(Stats.max(a), 1));
            figure.put("wallMedianMs", Stats.round(Stats.median(wall.get(k).stream()
                    .mapToDouble(Double::doubleValue).toArray()), 1));
            figure.put("loadsMs", ms.get(k));
            figure.put("viteCpuMsPerLoad", Stats.round(cpu.get(k)[0] / (double) count, 1));
            if (vias.get(k).gateway() != null) {
                figure.put("gatewayCpuMsPerLoad", Stats.round(cpu.get(k)[1] / (double) count, 1));
            }
            if (vias.get(k).ingress() != null) {
                figure.put("ingressCpuMsPerLoad", Stats.round(cpu.get(k)[2] / (double) count, 1));
            }
            out.put(keys.get(k), figure);
        }
        return out;
    }

    private static long[] cpuMillis(LabProcess vite, Via via) {
        return new long[]{vite == null ? 0 : Mem.cpuMillis(vite.pid()),
                via.gateway() == null ? 0 : Mem.cpuMillis(via.gateway().pid()),
                via.ingress() == null ? 0 : Mem.cpuMillis(via.ingress().pid())};
    }

    private double[] loadOnce(String url, InetSocketAddress proxy, String user, String password) {
        ObjectNode ctxParams = DevTools.params().put("disposeOnDetach", true);
        if (proxy != null) {
            ctxParams.put("proxyServer", "http://" + proxy.getHostString() + ":" + proxy.getPort());
            ctxParams.put("proxyBypassList", "<-loopback>");
        }
        String context = cdp.send("Target.createBrowserContext", ctxParams).get("browserContextId").asText();
        try {
            String target = cdp.send("Target.createTarget", DevTools.params().put("url", "about:blank")
                    .put("browserContextId", context)).get("targetId").asText();
            String session = cdp.send("Target.attachToTarget", DevTools.params().put("targetId", target)
                    .put("flatten", true)).get("sessionId").asText();
            cdp.send("Page.enable", null, session);
            cdp.send("Network.enable", null, session);
            if (proxy != null) {
                credentials.put(session, new String[]{user, password});
                ObjectNode fetch = DevTools.params().put("handleAuthRequests", true);
                fetch.putArray("patterns").addObject().put("urlPattern", "*");
                cdp.send("Fetch.enable", fetch, session);
            }
            navigate(session, url.replaceAll("/$", "") + "/prime.txt");
            if (proxy != null) {
                cdp.send("Fetch.disable", null, session);
            }
            cdp.send("Network.clearBrowserCache", null, session);
            long t0 = System.nanoTime();
            navigate(session, url);
            long t1 = System.nanoTime();
            JsonNode modules = cdp.send("Runtime.evaluate", DevTools.params().put("expression", "window.__modules")
                    .put("returnByValue", true), session).path("result").path("value");
            if (modules.asInt() != MODULES) {
                throw new IllegalStateException("page did not run all modules: window.__modules=" + modules);
            }
            double loadEnd = cdp.send("Runtime.evaluate", DevTools.params().put("expression",
                    "performance.getEntriesByType('navigation')[0].loadEventEnd").put("returnByValue", true),
                    session).path("result").path("value").asDouble();
            credentials.remove(session);
            return new double[]{loadEnd, (t1 - t0) / 1e6};
        } finally {
            try {
                cdp.send("Target.disposeBrowserContext", DevTools.params().put("browserContextId", context));
            } catch (RuntimeException e) {
                // already gone
            }
        }
    }

    private void navigate(String session, String url) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        loaded.put(session, done);
        try {
            JsonNode r = cdp.send("Page.navigate", DevTools.params().put("url", url), session);
            if (r.hasNonNull("errorText")) {
                throw new IllegalStateException("navigation to " + url + " failed: " + r.get("errorText").asText());
            }
            done.get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("loading " + url + ": " + e, e);
        } finally {
            loaded.remove(session);
        }
    }

    @Override
    public void close() {
        chromium.close();
    }
}
