package dev.previewtunnel.spikes.docs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.ingress.browser.BrowserLauncher;
import dev.previewtunnel.ingress.browser.DevTools;
import dev.previewtunnel.ingress.ssh.SshDestination;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.browser.Page;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.lab.Sshd;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

/**
 * The host {@code devbox} of README's {@code open ssh://devbox}: a lab {@link Sshd} on loopback whose sessions get
 * fresh XDG directories (the host starts with no gateway jar, no keys, no socket), reached the way a reader's
 * {@code ~/.ssh/config} reaches it: an {@code ssh} wrapper first on the sandbox's PATH (open runs {@code ssh} from
 * PATH) adds {@code -F CONFIG}, whose {@code Host devbox} names the lab's address, port, user, key and known hosts,
 * and execs the real ssh. Every ssh the command starts therefore carries CONFIG's path, and the host's gateway the
 * remote cache's: what {@link #afterExit()} looks for.
 */
final class LabDevbox implements AutoCloseable, DocShellBlocksRunTest.LiveCheck {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final Sshd sshd;
    private final Path config;
    private final Path remoteCache;
    private final Path stateDir;
    private final int devPort;

    private LabDevbox(Sshd sshd, Path config, Path remoteCache, Path stateDir, int devPort) {
        this.sshd = sshd;
        this.config = config;
        this.remoteCache = remoteCache;
        this.stateDir = stateDir;
        this.devPort = devPort;
    }

    /** What this needs and the machine lacks: sshd, ssh, ssh-keygen, a Chromium (empty when all are there). */
    static List<String> missing() {
        List<String> missing = new ArrayList<>();
        for (String name : List.of("/usr/sbin/sshd", "ssh", "ssh-keygen")) {
            if (Processes.find(name) == null) {
                missing.add(name);
            }
        }
        if (BrowserLauncher.NAMES.stream().limit(2).allMatch(n -> Processes.find(n) == null)) {
            missing.add("chromium");
        }
        return missing;
    }

    /**
     * Starts sshd in {@code dir} and writes the ssh wrapper to {@code bin}; {@code stateDir} is the desktop state
     * directory open uses in the sandbox, {@code devPort} where the dev server listens.
     */
    static LabDevbox start(Path dir, Path bin, Path stateDir, int devPort) throws IOException {
        Path remote = Files.createDirectories(dir.resolve("remote"));
        Path cache = Files.createDirectories(remote.resolve("cache"));
        Path runtime = Files.createDirectories(remote.resolve("run"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Map<String, String> env = Map.of("XDG_CACHE_HOME", cache.toString(),
                "XDG_STATE_HOME", Files.createDirectories(remote.resolve("state")).toString(),
                "XDG_RUNTIME_DIR", runtime.toString());
        Sshd sshd = Sshd.start(Files.createDirectories(dir.resolve("sshd")), "INFO", env);
        try {
            Path config = dir.resolve("ssh_config");
            Files.writeString(config, """
                    Host devbox
                      HostName 127.0.0.1
                      Port %d
                      User %s
                      IdentityFile %s
                      IdentitiesOnly yes
                      BatchMode yes
                      StrictHostKeyChecking accept-new
                      UserKnownHostsFile %s
                    """.formatted(sshd.port(), sshd.user(), sshd.userKey(), dir.resolve("known_hosts")));
            Files.setPosixFilePermissions(config, PosixFilePermissions.fromString("rw-------"));
            Path wrapper = bin.resolve("ssh");
            Files.writeString(wrapper, "#!/bin/sh\nexec '" + Processes.find("ssh") + "' -F '" + config
                    + "' \"$@\"\n");
            Files.setPosixFilePermissions(wrapper, PosixFilePermissions.fromString("rwx------"));
            return new LabDevbox(sshd, config, cache, stateDir, devPort);
        } catch (IOException | RuntimeException e) {
            sshd.close();
            throw e;
        }
    }

    /**
     * open's line names the dev server's URL on this desktop and devbox; the tab open started shows the dev server's
     * page and fetches from it again through the tunnel (over a DevTools port the chromium wrapper adds); the
     * gateway runs on the host, from the jar open uploaded to the host's cache.
     */
    @Override
    public List<String> whileRunning(List<String> stdout) throws IOException {
        List<String> problems = new ArrayList<>();
        JsonNode line = JSON.readTree(stdout.isEmpty() ? "{}" : stdout.get(0));
        String url = "http://localhost:" + devPort + "/";
        if (!url.equals(line.path("urls").path(0).asText()) || !"devbox".equals(line.path("host").asText())) {
            problems.add("open's line should name " + url + " and host devbox: " + line);
            return problems;
        }
        // Bounded, not at once: seen absent once right after the line (in one of six runs; not explained yet).
        if (!Processes.within(WAIT, () -> jarInCache() && !processesMentioning(remoteCache.toString()).isEmpty())) {
            problems.add("no env-gateway running on devbox from the uploaded jar (host cache " + remoteCache + ")");
        }
        Path profile = BrowserLauncher.profileDir(stateDir, SshDestination.parse("ssh://devbox").key(),
                line.path("session").asText());
        AtomicReference<URI> endpoint = new AtomicReference<>();
        if (!Processes.within(WAIT, () -> DevTools.endpointIn(profile.resolve("DevToolsActivePort"))
                .map(e -> { endpoint.set(e); return true; }).orElse(false))) {
            problems.add("the browser open started wrote no DevToolsActivePort in " + profile);
            return problems;
        }
        try (DevTools cdp = DevTools.connect(endpoint.get())) {
            Optional<String> tab = tabWithUrl(cdp, url);
            if (tab.isEmpty()) {
                problems.add("no tab at " + url + " in the browser open started");
                return problems;
            }
            Page page = Page.attach(cdp, tab.get());
            page.waitFor("document.body && document.body.innerText.includes('" + SampleApp.INDEX_MARKER + "')",
                    WAIT);
            String hello = page.evaluateString("fetch('/hello', {cache: 'no-store'}).then(r => r.text())");
            if (!SampleApp.HELLO_BODY.equals(hello)) {
                problems.add("the page's fetch('/hello') through the tunnel answered '" + hello + "'");
            }
        } catch (AssertionError | RuntimeException e) {
            problems.add("the page at " + url + " in open's browser: " + e.getMessage());
        }
        return problems;
    }

    /**
     * After SIGINT: no ssh of the link (its command line holds CONFIG's path) and no gateway on the host (the remote
     * cache's) left, within a bound. Leftovers are reported, then stopped so that they outlive no test.
     */
    @Override
    public List<String> afterExit() {
        if (Processes.within(WAIT, () -> leftovers().isEmpty())) {
            return List.of();
        }
        List<ProcessHandle> left = leftovers();
        List<String> shown = left.stream().map(p -> p.pid() + " " + p.info().commandLine().orElse("?")).toList();
        left.forEach(ProcessHandle::destroyForcibly);
        return List.of("left running " + WAIT.toSeconds() + " s after open exited: " + shown);
    }

    private List<ProcessHandle> leftovers() {
        return Stream.concat(processesMentioning(config.toString()).stream(),
                processesMentioning(remoteCache.toString()).stream()).toList();
    }

    private boolean jarInCache() {
        try (Stream<Path> files = Files.walk(remoteCache)) {
            return files.anyMatch(p -> p.getFileName().toString().equals("env-gateway.jar"));
        } catch (IOException e) {
            return false;
        }
    }

    private static Optional<String> tabWithUrl(DevTools cdp, String url) {
        AtomicReference<String> found = new AtomicReference<>();
        Processes.within(WAIT, () -> {
            for (JsonNode t : cdp.send("Target.getTargets", DevTools.params()).path("targetInfos")) {
                if ("page".equals(t.path("type").asText()) && t.path("url").asText().startsWith(url)) {
                    found.set(t.path("targetId").asText());
                    return true;
                }
            }
            return false;
        });
        return Optional.ofNullable(found.get());
    }

    /** Live processes whose command line mentions {@code text}, this JVM excluded. */
    private static List<ProcessHandle> processesMentioning(String text) {
        long self = ProcessHandle.current().pid();
        return ProcessHandle.allProcesses().filter(p -> p.pid() != self)
                .filter(p -> p.info().commandLine().orElse("").contains(text)).toList();
    }

    @Override
    public void close() {
        sshd.close();
    }
}
