package dev.previewtunnel.spikes.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.ingress.ssh.SshDestination;
import dev.previewtunnel.ingress.browser.BrowserLauncher;
import dev.previewtunnel.ingress.browser.DevTools;
import dev.previewtunnel.spikes.browser.Page;
import dev.previewtunnel.spikes.e2e.Journeys;
import dev.previewtunnel.spikes.e2e.TinyHttpServer;
import dev.previewtunnel.spikes.e2e.ViteDevServer;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.lab.Sshd;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 19's front door, end to end with real components: a throwaway sshd on loopback (its sessions get fresh
 * XDG directories, so the "remote" starts with no gateway and no keys), the real Vite fixture as the dev server,
 * and the real Chromium that {@code desktop-ingress open} starts itself (headless through --browser-arg). The test
 * types no credential: it only watches the browser over a second DevTools connection.
 */
class OpenCommandRunTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration OPEN = Duration.ofSeconds(120);
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    @AfterAll
    static void cleanUp() throws IOException {
        CliProcess.deleteStateHome();
    }

    /** The remote session's fresh XDG directories: its cache, its state (keys) and its run dir (the socket). */
    private record Remote(Path cache, Path state, Path runtime) {
        Map<String, String> env() {
            return Map.of("XDG_CACHE_HOME", cache.toString(), "XDG_STATE_HOME", state.toString(),
                    "XDG_RUNTIME_DIR", runtime.toString());
        }
    }

    private Remote remote() throws IOException {
        Path r = Files.createDirectories(dir.resolve("remote"));
        Remote remote = new Remote(Files.createDirectories(r.resolve("cache")),
                Files.createDirectories(r.resolve("state")), Files.createDirectories(r.resolve("run")));
        Files.setPosixFilePermissions(remote.runtime(), java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
        return remote;
    }

    private static List<String> openArgs(Sshd sshd, Path state, String... more) {
        List<String> args = new ArrayList<>(List.of("open", "ssh://" + sshd.destination() + ":" + sshd.port()));
        args.addAll(List.of(more));
        args.addAll(List.of("--ssh", sshd.sshClientScript().toString(), "--identity", sshd.userKey().toString(),
                "--state-dir", state.toString()));
        sshd.clientOptions().forEach(o -> args.addAll(List.of("--ssh-option", o)));
        return args;
    }

    private static List<String> headless() {
        return List.of("--browser", Processes.require("chromium", "apt-get install chromium").toString(),
                "--browser-arg=--headless", "--browser-arg=--no-sandbox", "--browser-arg=--disable-gpu",
                "--browser-arg=--disable-quic", "--browser-arg=--disable-background-networking",
                "--browser-arg=--disable-component-update", "--browser-arg=--disable-sync",
                // open drives its browser over a pipe; this port is the test's own window on it.
                "--browser-arg=--remote-debugging-port=0");
    }

    @Test
    @Timeout(420)
    void oneCommandOpensThePageKeepsItAliveAndLeavesNothingBehind() throws Exception {
        Remote remote = remote();
        Path state = dir.resolve("desktop");
        try (ViteDevServer vite = ViteDevServer.start();
             Sshd sshd = Sshd.start(Files.createDirectories(dir.resolve("sshd")), "INFO", remote.env())) {
            assertEquals(0, countFiles(remote.cache()), "the remote starts with an empty cache");
            List<String> args = openArgs(sshd, state, "--port", String.valueOf(vite.port()), "--grant-ttl", "20s");
            args.addAll(headless());
            try (CliProcess open = CliProcess.start("desktop-ingress", args.toArray(String[]::new))) {
                JsonNode line = open.awaitEvent("open", OPEN);
                String url = "http://localhost:" + vite.port() + "/";
                assertEquals(url, line.path("urls").path(0).asText(), line::toString);
                assertEquals(1, line.path("urls").size(), line::toString);
                assertTrue(line.path("proxy").asText().startsWith("127.0.0.1:"), line::toString);
                assertEquals("default", line.path("session").asText(), line::toString);
                assertFalse(line.has("credentialsFile"), "a browser was started: no credential file " + line);
                assertTrue(Files.isRegularFile(jarIn(remote.cache())), "the gateway jar was uploaded to the cache");

                SshDestination dest = SshDestination.parse("ssh://" + sshd.destination() + ":" + sshd.port());
                Path profile = BrowserLauncher.profileDir(state, dest.key(), "default");
                try (DevTools cdp = DevTools.connect(devTools(profile))) {
                    Page page = Page.attach(cdp, targetWithUrl(cdp, url));
                    Journeys.waitForValue(page, vite, ViteDevServer.INITIAL_VALUE);
                    renewalsPassWithNoFailedRequest(page, open, 6);
                    // After the renewals, so the edit also shows that the page's first HMR socket outlived them.
                    try {
                        hmrEditAppliesWithoutReload(page, vite);
                    } catch (AssertionError e) {
                        throw new AssertionError(e.getMessage() + "; open's stderr: " + open.stderr(), e);
                    }
                    statusPageOpensANewListener(cdp, vite.port());
                    pageRecoversAfterSshDies(page, open, vite);
                }
                open.signal("INT");
                assertEquals(0, open.awaitExit(Duration.ofSeconds(60)), open::stderr);
                assertFalse(open.stdout().contains("\"password\""), "no credential on stdout");
            }
            Processes.await("no gateway process left on the remote", WAIT,
                    () -> processesMentioning(remote.cache().toString()).isEmpty());
            Processes.await("no ssh process of the session left", WAIT,
                    () -> processesMentioning(state.toString()).isEmpty());
            try (Stream<Path> sockets = Files.walk(remote.runtime())) {
                assertEquals(List.of(), sockets.filter(p -> p.toString().endsWith(".sock")).toList(),
                        "the remote socket is removed");
            }
            assertTrue(Files.isDirectory(state.resolve("browser-profiles")), "the browser profile persists");
        }
    }

    @Test
    @Timeout(120)
    void aRemoteWithoutJavaGetsOneClearLine() throws Exception {
        Remote remote = remote();
        try (Sshd sshd = Sshd.start(Files.createDirectories(dir.resolve("sshd")), "INFO", remote.env())) {
            List<String> args = openArgs(sshd, dir.resolve("desktop"), "--port", "5173", "--no-browser",
                    "--remote-java", "/nonexistent/java");
            CliProcess open = CliProcess.run(OPEN, "desktop-ingress", args.toArray(String[]::new));
            assertEquals(2, open.process.exitValue(), open::stderr);
            // The error line is the CLI's; log lines of the closing link may come before or after it.
            List<String> errors = open.stderrLines().stream().filter(l -> l.startsWith("desktop-ingress: ")).toList();
            assertEquals(1, errors.size(), open::stderr);
            assertTrue(errors.get(0).contains("Java 17"), "one line naming what is missing: " + errors);
            assertTrue(processesMentioning(remote.cache().toString()).isEmpty(), "nothing left running");
        }
    }

    private static void hmrEditAppliesWithoutReload(Page page, ViteDevServer vite) {
        Journeys.waitForValue(page, vite, ViteDevServer.INITIAL_VALUE);
        // An edit before the HMR socket is up is lost (Vite sends the update to no one): wait for its client's
        // "[vite] connected." (Runtime.enable replays what was logged before this test attached).
        Processes.await("Vite's HMR client to log [vite] connected", WAIT,
                () -> page.console().stream().anyMatch(m -> m.contains("[vite] connected")));
        String marker = page.evaluateString("window.__marker = 'kept-' + Math.random(); window.__marker");
        double timeOrigin = page.evaluate("performance.timeOrigin").asDouble();
        String edited = "edited-" + UUID.randomUUID().toString().substring(0, 8);
        Journeys.saveValue(page, vite, edited);
        Journeys.assertNoFullReload(page.evaluate(Journeys.PAGE_STATE), marker, timeOrigin);
        Journeys.saveValue(page, vite, ViteDevServer.INITIAL_VALUE);
        Journeys.assertNoFullReload(page.evaluate(Journeys.PAGE_STATE), marker, timeOrigin);
    }

    /**
     * Grants of 20 s are renewed at half their life. The gateway takes a grant up to 30 s past its expiry (clock
     * skew), so the window runs to six renewals (about a minute), past the first grant's 50 s. Every 500 ms the page
     * opens a WebSocket to Vite's HMR endpoint: a CONNECT, so a new tunnel stream whose grant the gateway checks
     * (a fetch could ride a kept proxy connection and never open one). None may fail, and the ingress may never
     * have needed its on-demand refresh (audit grant_refresh) nor met grant_expired: the renewals alone kept up.
     */
    private static void renewalsPassWithNoFailedRequest(Page page, CliProcess open, int renewals) {
        int before = count(open, "grant_renewed");
        // Vite accepts an HMR WebSocket only with the token its client carries (since Vite 6.0.9).
        String token = page.evaluateString("fetch('/@vite/client').then(r => r.text())"
                + ".then(t => (t.match(/const wsToken = \"([^\"]+)\"/) || [])[1] || '')");
        assertFalse(token.isEmpty(), "no HMR token in Vite's client");
        page.evaluate("window.__ok = 0; window.__failed = []; window.__poll = setInterval(() => { "
                + "const ws = new WebSocket('ws://' + location.host + '/?token=" + token + "', 'vite-hmr'); "
                + "ws.onopen = () => { window.__ok++; ws.close(); }; "
                + "ws.onerror = () => window.__failed.push(new Date().toISOString()); }, 500); true");
        Processes.await(renewals + " grant renewals", Duration.ofSeconds(120),
                () -> count(open, "grant_renewed") >= before + renewals);
        JsonNode result = page.evaluate("clearInterval(window.__poll); ({ok: window.__ok, failed: window.__failed})");
        assertEquals(0, result.path("failed").size(), "streams failed across the renewals: " + result);
        assertTrue(result.path("ok").asInt() > 80, "the page kept opening streams: " + result);
        assertEquals(0, count(open, "grant_refresh"), "an on-demand refresh was needed: " + open.stderr());
        assertFalse(open.stderr().contains("\"code\":\"grant_expired\""), "a grant expired: " + open.stderr());
    }

    private static void statusPageOpensANewListener(DevTools cdp, int vitePort) {
        String targetId = cdp.send("Target.createTarget", DevTools.params().put("url", "about:blank"))
                .get("targetId").asText();
        Page status = Page.attach(cdp, targetId);
        status.navigate("http://preview.localhost/");
        status.waitFor("document.body.innerText.includes('localhost:" + vitePort + "')", WAIT);
        try (TinyHttpServer later = new TinyHttpServer("127.0.0.1", 0)
                .route("/", ex -> TinyHttpServer.send(ex, 200, "text/plain", "hello from a later listener"))
                .start()) {
            int port = later.port();
            // The page reloads itself; the port appears once the remote gateway lists it.
            status.waitFor("[...document.forms].some(f => [...f.elements].some(e => e.value === '" + port + "'))",
                    WAIT);
            status.evaluate("[...document.forms].find(f => [...f.elements].some(e => e.value === '" + port
                    + "')).requestSubmit(); true");
            status.waitFor("location.href === 'http://localhost:" + port + "/' && "
                    + "document.body.innerText.includes('hello from a later listener')", WAIT);
        }
    }

    /**
     * kill -9 of the ssh master: the remote gateway's channel and the forward are gone; open reconnects and the
     * page, untouched by the test, works again (Vite's client reloads it once its server answers).
     */
    private static void pageRecoversAfterSshDies(Page page, CliProcess open, ViteDevServer vite) throws Exception {
        ProcessHandle master = ProcessHandle.of(open.process.pid()).orElseThrow().descendants()
                .filter(p -> p.info().commandLine().map(c -> c.contains("ssh") && c.contains(" -M")).orElse(false))
                .findFirst().orElseThrow(() -> new AssertionError("no ssh master under the open process"));
        int downs = count(open, "ssh_down");
        new ProcessBuilder("kill", "-9", Long.toString(master.pid())).start().waitFor();
        Processes.await("open to notice the lost link", WAIT, () -> count(open, "ssh_down") > downs);
        page.waitFor("(async () => { try { const r = await fetch('/?after-kill=' + Math.random(), "
                + "{cache: 'no-store'}); return r.ok && !r.headers.get('ptun-error'); } catch (e) { return false; } })()",
                Duration.ofSeconds(90));
        Journeys.waitForValue(page, vite, ViteDevServer.INITIAL_VALUE);
    }

    private static int count(CliProcess p, String event) {
        return (int) p.stderrLines().stream().filter(l -> l.contains("\"event\":\"" + event + "\"")).count();
    }

    private static String targetWithUrl(DevTools cdp, String url) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            for (JsonNode t : cdp.send("Target.getTargets", DevTools.params()).path("targetInfos")) {
                if ("page".equals(t.path("type").asText()) && t.path("url").asText().startsWith(url)) {
                    return t.path("targetId").asText();
                }
            }
            Processes.within(Duration.ofMillis(200), () -> false);
        }
        throw new AssertionError("no tab with " + url);
    }

    /** The DevTools endpoint of the browser open started, from its profile's DevToolsActivePort. */
    private static URI devTools(Path profile) throws IOException {
        Path file = profile.resolve("DevToolsActivePort");
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        return URI.create("ws://127.0.0.1:" + lines.get(0).trim() + lines.get(1).trim());
    }

    private static Path jarIn(Path cache) throws IOException {
        try (Stream<Path> files = Files.walk(cache)) {
            return files.filter(p -> p.getFileName().toString().equals("env-gateway.jar")).findFirst()
                    .orElse(cache.resolve("missing"));
        }
    }

    private static long countFiles(Path d) throws IOException {
        try (Stream<Path> files = Files.walk(d)) {
            return files.filter(Files::isRegularFile).count();
        }
    }

    /** Live processes whose command line mentions {@code text} (the test's own JVM excluded). */
    private static List<String> processesMentioning(String text) {
        long self = ProcessHandle.current().pid();
        return ProcessHandle.allProcesses().filter(p -> p.pid() != self)
                .map(p -> p.info().commandLine().orElse(""))
                .filter(c -> c.contains(text)).toList();
    }
}
