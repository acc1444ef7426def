package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.spikes.lab.LabProcess;
import dev.previewtunnel.spikes.lab.Processes;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The peer of issue 21: Microsoft's Dev Tunnels SSH stack (Node, {@code @microsoft/dev-tunnels-ssh} + {@code -ssh-tcp}
 * over {@code ws}), the two programs of {@code bench/devtunnels}: {@code env-side.js} (the gateway's role) and
 * {@code desktop-side.js} (the ingress's role: one WebSocket, one SSH session, a local port forwarded per target
 * port, plus Vite's for figure 7). Path {@code dt} runs it without security (beside our ws://), {@code dt-aes} with
 * its default secure configuration, aes256-gcm@openssh.com (beside our wss://). Measured like {@code ssh -L}: a plain
 * route to the forwarded local ports.
 */
record DevTunnelsPeer(String key, LabProcess env, LabProcess desk, Route route, String pageUrl, String describe)
        implements Lab.PagePath {

    static final String DIR = "bench/devtunnels";

    /** Two Node processes: no native-memory summary; VmHWM and sampled RSS, as for sshd and ssh. */
    MemWatch memWatch() {
        return new MemWatch(env, desk, false, false);
    }

    /**
     * Installs the pinned packages when needed, then starts both sides; fails (never skips) without node or npm.
     * A start that does not get ready is tried once more, and the peer's description says so: once in a smoke run
     * the desktop side printed nothing for a minute (its log now says how far it got).
     */
    static DevTunnelsPeer start(Lab lab, boolean aes, String logSuffix) {
        Path dir = install(lab.config.root);
        try {
            return startOnce(lab, aes, dir, logSuffix, "");
        } catch (IllegalStateException e) {
            if (Thread.currentThread().isInterrupted()) {
                throw e;
            }
            return startOnce(lab, aes, dir, logSuffix + "-retry", "; started a second time, the first start did "
                    + "not get ready (" + howFar(e.getMessage()) + ")");
        }
    }

    /** The first line of a failed start's message (which process, why) and its log's last progress line. */
    private static String howFar(String message) {
        List<String> lines = message.strip().lines().toList();
        String progress = lines.stream().skip(1).filter(l -> l.startsWith("connecting") || l.startsWith("WebSocket")
                || l.startsWith("SSH") || l.startsWith("forwarding")).reduce((a, b) -> b).orElse("no progress line");
        return lines.get(0) + " ... last: " + progress;
    }

    private static DevTunnelsPeer startOnce(Lab lab, boolean aes, Path dir, String logSuffix, String retried) {
        String key = aes ? "dt-aes" : "dt";
        String cipher = aes ? "aes256-gcm" : "none";
        LabProcess env = LabProcess.start("peer-env-" + key + logSuffix, List.of("node", dir.resolve("env-side.js").toString(),
                "--cipher", cipher), lab.dir, Lab.READY);
        LabProcess desk = null;
        try {
            JsonNode eReady = env.awaitReady(Duration.ofSeconds(30));
            List<String> cmd = new ArrayList<>(List.of("node", dir.resolve("desktop-side.js").toString(),
                    "--cipher", cipher, "ws://127.0.0.1:" + eReady.get("port").asInt()));
            lab.targetPorts.forEach(p -> cmd.add(String.valueOf(p)));
            if (lab.vitePort > 0) {
                cmd.add(String.valueOf(lab.vitePort)); // figure 7 loads the page through the last forward
            }
            desk = LabProcess.start("peer-desk-" + key + logSuffix, cmd, lab.dir, Lab.READY);
            JsonNode dReady = desk.awaitReady(Duration.ofSeconds(30));
            List<Integer> local = new ArrayList<>();
            dReady.get("ports").forEach(p -> local.add(p.asInt()));
            String pageUrl = lab.vitePort > 0 ? "http://127.0.0.1:" + local.remove(local.size() - 1) + "/" : null;
            // No half-close through the peer: its SshStream closes the channel when either side ends.
            Route route = Route.plain(key, aes ? "Dev Tunnels aes256-gcm" : "Dev Tunnels ws, no cipher", local,
                    false);
            Lab.awaitRoute(route, Duration.ofSeconds(20));
            JsonNode v = dReady.path("versions");
            JsonNode a = dReady.path("algorithms");
            String describe = String.format("node %s, @microsoft/dev-tunnels-ssh %s, -ssh-tcp %s, ws %s; kex %s, "
                            + "host key %s, cipher %s, hmac %s", v.path("node").asText(),
                    v.path("dev-tunnels-ssh").asText(), v.path("dev-tunnels-ssh-tcp").asText(), v.path("ws").asText(),
                    a.path("kex").asText(), a.path("hostKey").asText(), a.path("cipher").asText(),
                    a.path("hmac").asText()) + retried;
            return new DevTunnelsPeer(key, env, desk, route, pageUrl, describe);
        } catch (RuntimeException e) {
            if (desk != null) {
                desk.close();
            }
            env.close();
            throw e;
        }
    }

    /**
     * {@code npm ci} in bench/devtunnels when its node_modules is missing or older than the lock file (npm writes
     * node_modules/.package-lock.json on every install). Serialised: both peer paths of a run call it.
     */
    static synchronized Path install(Path root) {
        Path dir = root.resolve(DIR);
        Path lock = dir.resolve("package-lock.json");
        Path installed = dir.resolve("node_modules/.package-lock.json");
        try {
            if (!Files.isRegularFile(installed)
                    || Files.getLastModifiedTime(installed).compareTo(Files.getLastModifiedTime(lock)) < 0) {
                List<String> npm = List.of("npm", "ci", "--no-audit", "--no-fund");
                Processes.runOk(npm, dir, Duration.ofMinutes(5));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return dir;
    }

    @Override
    public PageLoad.Via pageVia() {
        return PageLoad.Via.direct(pageUrl, env, desk);
    }

    /** The peer's own complaints: sessions that failed or closed, channels it refused. */
    @Override
    public void putLogErrors(Map<String, Object> r) {
        StringBuilder sb = new StringBuilder();
        for (LabProcess p : List.of(env, desk)) {
            try (var lines = Files.lines(p.log(), StandardCharsets.UTF_8)) {
                lines.filter(l -> l.contains("\"sessionFailed\"") || l.contains("\"closed\"")
                        || l.contains("\"refused\"") || l.contains("Error")).limit(5)
                        .forEach(l -> sb.append(sb.isEmpty() ? "" : "\n").append(p.name()).append(": ").append(l));
            } catch (IOException | UncheckedIOException e) {
                // no log: nothing to report
            }
        }
        if (!sb.isEmpty()) {
            // The page loads' peer adds to its figures' peer's lines (each line names its process).
            r.merge("logErrors", sb.toString(), (a, b) -> a + "\n" + b);
        }
    }

    @Override
    public void close() {
        desk.close();
        env.close();
    }
}
