package dev.previewtunnel.ingress.browser;

import dev.previewtunnel.local.files.OwnerOnlyFiles;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Starts Chromium or Chrome already attributed to a browser session: its own persistent profile, the ingress as
 * its proxy for every host including loopback ({@code <-loopback>}), and the proxy credential answered over the
 * DevTools protocol ({@link ProxyCredentialAnswerer}) so that nobody types or sees it. The credential is never
 * on the command line; the URLs are opened only once the answering is in place, so the first request cannot meet
 * an unanswered 407 prompt.
 */
public final class BrowserLauncher {
    /** Looked up on {@code PATH} in this order when no binary is given. */
    public static final List<String> NAMES =
            List.of("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome");
    static final String PORT_FILE = "DevToolsActivePort";
    static final String LOG_FILE = "preview-tunnel-browser.log";

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

    /** {@code http://HOST:PORT} of the proxy, as Chromium names it in {@code --proxy-server} and in challenges. */
    static String proxyServer(InetSocketAddress proxy) {
        // The address, not a name: the browser must not resolve the proxy's name by itself (nor differently).
        String host = proxy.getAddress() != null ? proxy.getAddress().getHostAddress() : proxy.getHostString();
        return "http://" + (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + proxy.getPort();
    }

    /** The command line: no URL but {@code about:blank}, no credential. */
    static List<String> commandLine(Path binary, Path profileDir, InetSocketAddress proxy, List<String> extraArgs) {
        List<String> cmd = new ArrayList<>(List.of(binary.toString(),
                "--user-data-dir=" + profileDir,
                "--proxy-server=" + proxyServer(proxy),
                // Loopback and *.localhost go through the proxy too: they are the environment's (docs/desktop-ingress.md).
                "--proxy-bypass-list=<-loopback>",
                "--no-first-run",
                "--no-default-browser-check",
                "--remote-debugging-port=0"));
        cmd.addAll(extraArgs);
        cmd.add("about:blank");
        return cmd;
    }

    /**
     * Starts the browser with {@code profileDir} (created owner-only; kept), waits (bounded by {@code timeout})
     * for its DevTools endpoint, puts the credential answering in place, then opens {@code urls}.
     */
    public static LaunchedBrowser launch(Path binary, Path profileDir, InetSocketAddress proxy, String username,
                                         String password, List<String> extraArgs, List<URI> urls, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Path portFile = profileDir.resolve(PORT_FILE);
        Path log = profileDir.resolve(LOG_FILE);
        try {
            OwnerOnlyFiles.ensureDirectory(profileDir);
            Files.deleteIfExists(portFile); // a stale one from a crashed run names a dead port
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare the browser profile " + profileDir, e);
        }
        ProcessBuilder pb = new ProcessBuilder(commandLine(binary, profileDir, proxy, extraArgs))
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the browser " + binary, e);
        }
        DevTools devTools = null;
        try {
            devTools = DevTools.connect(awaitEndpoint(process, portFile, log, deadline));
            ProxyCredentialAnswerer answerer = new ProxyCredentialAnswerer(devTools, proxy, username, password);
            answerer.start();
            LaunchedBrowser browser = new LaunchedBrowser(process, devTools, answerer);
            browser.open(urls);
            return browser;
        } catch (RuntimeException e) {
            if (devTools != null) {
                devTools.close();
            }
            LaunchedBrowser.destroyTree(process);
            throw e;
        }
    }

    /** Waits for {@code DevToolsActivePort} (port, then the browser endpoint's path); fails if the browser exits. */
    static URI awaitEndpoint(Process process, Path portFile, Path log, long deadlineNanos) {
        while (true) {
            if (!process.isAlive()) {
                throw new IllegalStateException("the browser exited with status " + process.exitValue()
                        + " before it was ready; its output is in " + log);
            }
            Optional<URI> endpoint = readEndpoint(portFile);
            if (endpoint.isPresent()) {
                return endpoint.get();
            }
            if (System.nanoTime() - deadlineNanos > 0) {
                throw new IllegalStateException("the browser did not open its DevTools endpoint in time; its output is in "
                        + log);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(25));
        }
    }

    /** The browser endpoint named in a {@code DevToolsActivePort} file; empty while it is missing or being written. */
    public static Optional<URI> readEndpoint(Path portFile) {
        try {
            String[] lines = Files.readString(portFile, StandardCharsets.UTF_8).split("\n");
            if (lines.length < 2 || lines[0].isBlank() || lines[1].isBlank()) {
                return Optional.empty(); // being written
            }
            return Optional.of(URI.create("ws://127.0.0.1:" + Integer.parseInt(lines[0].trim()) + lines[1].trim()));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }
}
