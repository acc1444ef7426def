package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.ingress.browser.BrowserLauncher;
import dev.previewtunnel.ingress.browser.DevTools;
import dev.previewtunnel.ingress.ssh.SshDestination;
import dev.previewtunnel.spikes.lab.LabProcess;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.lab.Sshd;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Issue 19's figure: from typing {@code desktop-ingress open ssh://HOST --port N} to the first contentful paint of
 * the dev server's page in the browser that {@code open} starts, against a throwaway sshd on loopback and the
 * benchmark's 300-module Vite app. Cold: the remote has no cached gateway jar (uploaded) and no keys, the desktop
 * no browser profile. Warm: the second run on the same remote cache and profile. Beside them, in the same rounds,
 * the floor: the same headless Chromium started straight at the dev server, no proxy, no SSH. bench/first-paint.sh.
 */
final class FirstPaintBench {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration LIMIT = Duration.ofSeconds(180);

    private FirstPaintBench() {
    }

    static void main(String[] args) throws Exception {
        Path root = Path.of(".").toAbsolutePath().normalize();
        int rounds = 3;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--root" -> root = Path.of(args[++i]).toAbsolutePath().normalize();
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--help" -> {
                    System.out.println("bench/first-paint.sh [--rounds N (default 3)]: time from 'desktop-ingress "
                            + "open' to the first contentful paint, cold and warm, beside a browser started "
                            + "straight at the dev server");
                    return;
                }
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        System.exit(run(root, rounds, System.out));
    }

    static int run(Path root, int rounds, PrintStream out) throws Exception {
        String[] why = new String[1];
        Path nodeModules = PageLoad.viteNodeModules(root, why);
        if (nodeModules == null) {
            out.println("first-paint: cannot run: " + why[0]);
            return 2;
        }
        Path ingressJar = root.resolve("desktop-ingress/target/desktop-ingress.jar");
        Path gatewayJar = root.resolve("env-gateway/target/env-gateway.jar");
        Path chromium = Processes.require("chromium", "apt-get install chromium");
        Path dir = Files.createTempDirectory("ptun-first-paint");
        Map<String, List<Double>> ms = new LinkedHashMap<>();
        for (String k : List.of("floor", "cold", "warm", "coldOpenLine", "warmOpenLine")) {
            ms.put(k, new ArrayList<>());
        }
        int vitePort = Processes.freePort();
        try (LabProcess vite = PageLoad.startVite(PageLoad.writeApp(dir, nodeModules), vitePort, dir)) {
            String url = "http://localhost:" + vitePort + "/";
            for (int r = 1; r <= rounds; r++) {
                Path round = Files.createDirectories(dir.resolve("round" + r));
                Path remote = Files.createDirectories(round.resolve("remote"));
                Map<String, String> env = Map.of("XDG_CACHE_HOME", remote.resolve("cache").toString(),
                        "XDG_STATE_HOME", remote.resolve("state").toString(),
                        "XDG_RUNTIME_DIR", Files.createDirectories(remote.resolve("run")).toString());
                try (Sshd sshd = Sshd.start(Files.createDirectories(round.resolve("sshd")), "INFO", env)) {
                    ms.get("floor").add(floor(chromium, round.resolve("floor-profile"), url));
                    Path state = round.resolve("desktop");
                    double[] cold = open(ingressJar, gatewayJar, chromium, sshd, state, vitePort, round);
                    ms.get("cold").add(cold[0]);
                    ms.get("coldOpenLine").add(cold[1]);
                    double[] warm = open(ingressJar, gatewayJar, chromium, sshd, state, vitePort, round);
                    ms.get("warm").add(warm[0]);
                    ms.get("warmOpenLine").add(warm[1]);
                }
                out.printf("round %d: floor %.0f ms, cold %.0f ms (open line %.0f), warm %.0f ms (open line %.0f)%n",
                        r, last(ms.get("floor")), cold(ms, "cold"), cold(ms, "coldOpenLine"), cold(ms, "warm"),
                        cold(ms, "warmOpenLine"));
            }
        } finally {
            Processes.deleteTree(dir);
        }
        out.println();
        out.printf("%-34s %9s %9s %9s%n", "time to first contentful paint", "median", "min", "max");
        ms.forEach((k, v) -> {
            double[] a = v.stream().mapToDouble(Double::doubleValue).toArray();
            out.printf("%-34s %7.0f ms %6.0f ms %6.0f ms%n", label(k), Stats.median(a), Stats.min(a), Stats.max(a));
        });
        double warmMedian = Stats.median(ms.get("warm").stream().mapToDouble(Double::doubleValue).toArray());
        out.printf("target: warm <= 5000 ms: %s (%.0f ms)%n", warmMedian <= 5000 ? "met" : "MISSED", warmMedian);
        return 0;
    }

    private static double last(List<Double> v) {
        return v.get(v.size() - 1);
    }

    private static double cold(Map<String, List<Double>> ms, String k) {
        return last(ms.get(k));
    }

    private static String label(String k) {
        return switch (k) {
            case "floor" -> "browser straight to Vite (floor)";
            case "cold" -> "open, cold (upload, keys, profile)";
            case "warm" -> "open, warm";
            case "coldOpenLine" -> "  cold: command to the open line";
            default -> "  warm: command to the open line";
        };
    }

    /** {@code open} from its start to the page's first contentful paint; [paint ms, open-line ms]. */
    private static double[] open(Path ingressJar, Path gatewayJar, Path chromium, Sshd sshd, Path state, int port,
                                 Path round) throws Exception {
        SshDestination dest = SshDestination.parse("ssh://" + sshd.destination() + ":" + sshd.port());
        Path profile = BrowserLauncher.profileDir(state, dest.key(), "default");
        Files.deleteIfExists(profile.resolve("DevToolsActivePort"));
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", ingressJar.toString(), "open", "ssh://" + sshd.destination() + ":" + sshd.port(),
                "--port", String.valueOf(port), "--state-dir", state.toString(), "--audit-file", "-",
                "--gateway-jar", gatewayJar.toString(),
                "--ssh", sshd.sshClientScript().toString(), "--identity", sshd.userKey().toString(),
                "--browser", chromium.toString()));
        sshd.clientOptions().forEach(o -> cmd.addAll(List.of("--ssh-option", o)));
        headless().forEach(a -> cmd.add("--browser-arg=" + a));
        cmd.add("--browser-arg=--remote-debugging-port=0"); // open drives it over a pipe; this port is ours
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(round.resolve("open.stderr").toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        long t0 = System.currentTimeMillis();
        Process p = pb.start();
        try {
            CompletableFuture<Long> openLine = CompletableFuture.supplyAsync(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        if (line.contains("\"event\":\"open\"")) {
                            return System.currentTimeMillis();
                        }
                    }
                    return -1L;
                } catch (IOException e) {
                    return -1L;
                }
            });
            long opened = openLine.get(LIMIT.toMillis(), TimeUnit.MILLISECONDS);
            if (opened < 0) {
                throw new IllegalStateException("open printed no open line: " + Processes.tail(
                        round.resolve("open.stderr"), 2000));
            }
            double paint = firstPaintEpochMs(profile, "http://localhost:" + port + "/") - t0;
            return new double[]{paint, opened - t0};
        } finally {
            p.destroy(); // SIGTERM: open stops the browser and the remote gateway
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                Processes.destroyTree(p);
            }
        }
    }

    /** A headless Chromium started straight at the page, no proxy: start to first contentful paint, in ms. */
    private static double floor(Path chromium, Path profile, String url) throws Exception {
        Files.createDirectories(profile);
        List<String> cmd = new ArrayList<>(List.of(chromium.toString(), "--user-data-dir=" + profile,
                "--no-first-run", "--remote-debugging-port=0"));
        cmd.addAll(headless());
        cmd.add(url);
        long t0 = System.currentTimeMillis();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            return firstPaintEpochMs(profile, url) - t0;
        } finally {
            Processes.destroyTree(p);
        }
    }

    private static List<String> headless() {
        return List.of("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--disable-background-networking", "--disable-component-update", "--disable-sync");
    }

    /** Waits for the browser's DevTools port, the tab with {@code url} and its first contentful paint (epoch ms). */
    private static double firstPaintEpochMs(Path profile, String url) throws Exception {
        Path port = profile.resolve("DevToolsActivePort");
        Processes.await("the browser's DevToolsActivePort", LIMIT, () -> {
            try {
                return Files.isRegularFile(port) && Files.readAllLines(port).size() >= 2;
            } catch (IOException e) {
                return false;
            }
        });
        List<String> lines = Files.readAllLines(port, StandardCharsets.UTF_8);
        try (DevTools cdp = DevTools.connect(URI.create("ws://127.0.0.1:" + lines.get(0).trim()
                + lines.get(1).trim()))) {
            String[] session = new String[1];
            double[] paint = new double[1];
            Processes.await("first contentful paint of " + url, LIMIT, () -> {
                if (session[0] == null) {
                    for (JsonNode t : cdp.send("Target.getTargets", DevTools.params()).path("targetInfos")) {
                        if ("page".equals(t.path("type").asText()) && t.path("url").asText().startsWith(url)) {
                            session[0] = cdp.send("Target.attachToTarget", DevTools.params()
                                    .put("targetId", t.path("targetId").asText()).put("flatten", true))
                                    .path("sessionId").asText();
                        }
                    }
                    return false;
                }
                JsonNode v = cdp.send("Runtime.evaluate", DevTools.params().put("returnByValue", true)
                        .put("expression", "(() => { const e = performance.getEntriesByName("
                                + "'first-contentful-paint')[0]; return e && document.getElementById('out')"
                                + ".textContent.endsWith('modules') ? performance.timeOrigin + e.startTime : 0; })()"),
                        session[0]).path("result").path("value");
                paint[0] = v.asDouble();
                return paint[0] > 0;
            });
            return paint[0];
        }
    }
}
