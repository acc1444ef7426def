package dev.previewtunnel.ingress.browser;

import dev.previewtunnel.local.files.OwnerOnlyFiles;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Starts Chromium or Chrome already attributed to a browser session: its own persistent profile, the ingress as
 * its proxy for every host including loopback ({@code <-loopback>}), and the proxy credential answered over the
 * DevTools protocol ({@link ProxyCredentialAnswerer}) so that nobody types or sees it, over a pipe rather than a
 * port ({@link DevToolsPipe}). The credential is never on the command line; the URLs are opened only once the
 * answering is in place, so the first request cannot meet an unanswered 407 prompt.
 */
public final class BrowserLauncher {
    /** Looked up on {@code PATH} in this order when no binary is given. */
    public static final List<String> NAMES =
            List.of("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome");
    public static final String LOG_FILE = "preview-tunnel-browser.log";

    private BrowserLauncher() {
    }

    /** {@code explicit} (must be executable), else the first of {@link #NAMES} on {@code PATH}. */
    public static Path find(Path explicit) {
        if (explicit != null) {
            if (!Files.isRegularFile(explicit) || !Files.isExecutable(explicit)) {
                throw new IllegalStateException("--browser " + explicit + " is not an executable file");
            }
            return explicit;
        }
        return onPath(System.getenv("PATH")).orElseThrow(() -> new IllegalStateException(
                "no Chromium or Chrome on PATH: install one, pass --browser PATH, or use --no-browser"));
    }

    static Optional<Path> onPath(String path) {
        if (path == null) {
            return Optional.empty();
        }
        for (String name : NAMES) {
            for (String dir : path.split(File.pathSeparator)) {
                if (dir.isEmpty()) {
                    continue;
                }
                Path candidate = Path.of(dir, name);
                if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                    return Optional.of(candidate);
                }
            }
        }
        return Optional.empty();
    }

    /**
     * The persistent profile of one (host, session) under the state directory:
     * {@code STATE/browser-profiles/HOST--SESSION}, each part reduced to {@code [A-Za-z0-9._-]} (other characters
     * become {@code _}): one path element, never {@code .} or {@code ..} (it holds {@code --}), so no host or
     * session name can reach outside that directory.
     */
    public static Path profileDir(Path stateDir, String host, String session) {
        return stateDir.resolve("browser-profiles").resolve(safeName(host) + "--" + safeName(session));
    }

    private static String safeName(String s) {
        return s.replaceAll("[^A-Za-z0-9._-]", "_");
    }

    /** {@code http://HOST:PORT} of the proxy, as Chromium names it in {@code --proxy-server} and in challenges. */
    static String proxyServer(InetSocketAddress proxy) {
        // The address, not a name: the browser must not resolve the proxy's name by itself (nor differently).
        String host = proxy.getAddress() != null ? proxy.getAddress().getHostAddress() : proxy.getHostString();
        return "http://" + (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + proxy.getPort();
    }

    /** The browser's command line: no URL but {@code about:blank}, no credential. */
    static List<String> commandLine(Path binary, Path profileDir, InetSocketAddress proxy, List<String> extraArgs) {
        List<String> cmd = new ArrayList<>(List.of(binary.toString(),
                "--user-data-dir=" + profileDir,
                "--proxy-server=" + proxyServer(proxy),
                // Loopback and *.localhost go through the proxy too: they are the environment's (docs/desktop-ingress.md).
                "--proxy-bypass-list=<-loopback>",
                "--no-first-run",
                "--no-default-browser-check",
                // Every request of this profile goes to the proxy: the browser's own background traffic (sync,
                // component updates, ...) would only be refused there, filling the audit and the status page.
                "--disable-background-networking",
                // No DevTools port that any local process could drive: the pipe is this process's alone.
                "--remote-debugging-pipe"));
        cmd.addAll(extraArgs);
        cmd.add("about:blank");
        return cmd;
    }

    /**
     * Starts the browser with {@code profileDir} (created owner-only; kept), puts the credential answering in place
     * (bounded by {@code timeout}), then opens {@code urls}.
     */
    public static LaunchedBrowser launch(Path binary, Path profileDir, InetSocketAddress proxy, String username,
                                         String password, List<String> extraArgs, List<URI> urls, Duration timeout) {
        Path log = profileDir.resolve(LOG_FILE);
        DevToolsPipe pipe;
        try {
            OwnerOnlyFiles.ensureDirectory(profileDir);
            pipe = DevToolsPipe.create();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare the browser profile " + profileDir, e);
        }
        Process process = null;
        DevTools devTools;
        try {
            process = pipe.wrap(commandLine(binary, profileDir, proxy, extraArgs))
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
            devTools = pipe.connect();
        } catch (IOException e) {
            if (process != null) {
                LaunchedBrowser.destroyTree(process, profileDir);
            }
            pipe.discard();
            throw new UncheckedIOException("cannot start the browser " + binary, e);
        }
        // A browser that dies fails what waits on it at once, instead of at a command's timeout.
        process.onExit().thenRun(devTools::close);
        try {
            try {
                awaitReady(devTools, process, log, timeout);
            } finally {
                pipe.unlink();
            }
            ProxyCredentialAnswerer answerer = new ProxyCredentialAnswerer(devTools, proxy, username, password);
            answerer.start();
            LaunchedBrowser browser = new LaunchedBrowser(process, profileDir, devTools, answerer);
            browser.open(urls);
            return browser;
        } catch (RuntimeException e) {
            devTools.close();
            LaunchedBrowser.destroyTree(process, profileDir);
            throw e;
        }
    }

    /** The browser answers a first command within {@code timeout}; fails in words if it exits or stays silent. */
    static void awaitReady(DevTools devTools, Process process, Path log, Duration timeout) {
        try {
            DevTools.await(devTools.sendAsync("Browser.getVersion", null, null), "Browser.getVersion", timeout);
        } catch (DevTools.DevToolsException e) {
            String why = process.isAlive() ? "did not answer over DevTools within " + timeout
                    : "exited with status " + process.onExit().join().exitValue();
            throw new IllegalStateException("the browser " + why + " before it was ready; its output is in " + log, e);
        }
    }
}
