package dev.previewtunnel.spikes.browser;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A real headless Chromium, started with the flags a preview browser session uses (the ingress as its HTTP proxy,
 * {@code <-loopback>} so that {@code localhost} goes to the proxy too) or with no proxy at all, driven over the
 * DevTools protocol. Closing it shuts the browser down gracefully (so its profile is flushed to disk) and then
 * destroys the whole process tree.
 */
public final class Browser implements AutoCloseable {
    public static final String CHROMIUM = "chromium";

    /** How to start the browser. {@code proxy == null}: no proxy (direct connections, {@code --no-proxy-server}). */
    public record Options(InetSocketAddress proxy, String username, String password, Path userDataDir,
                          boolean keepUserDataDir) {
        public static Options proxied(InetSocketAddress proxy, String username, String password) {
            return new Options(proxy, username, password, null, false);
        }

        public static Options direct() {
            return new Options(null, null, null, null, false);
        }

        /** Same settings, this (kept) profile directory. */
        public Options withProfile(Path dir) {
            return new Options(proxy, username, password, dir, true);
        }
    }

    private final Options options;
    private final Path userDataDir;
    private final Path log;
    private final Path tmp;
    private final Process process;
    private final Cdp cdp;
    private final List<Page> pages = new CopyOnWriteArrayList<>();
    private final long startMillis;

    private Browser(Options options, Path userDataDir, Path log, Path tmp, Process process, Cdp cdp,
                    long startMillis) {
        this.options = options;
        this.userDataDir = userDataDir;
        this.log = log;
        this.tmp = tmp;
        this.process = process;
        this.cdp = cdp;
        this.startMillis = startMillis;
    }

    /** The command line for these options (public so the docs and reports can show it exactly). */
    public static List<String> commandLine(Path chromium, Options options, Path userDataDir) {
        List<String> cmd = new ArrayList<>(List.of(chromium.toString(),
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + userDataDir));
        if (options.proxy() != null) {
            cmd.add("--proxy-server=http://" + options.proxy().getHostString() + ":" + options.proxy().getPort());
            cmd.add("--proxy-bypass-list=<-loopback>");
        } else {
            cmd.add("--no-proxy-server");
        }
        cmd.add("--remote-debugging-port=0");
        cmd.add("about:blank");
        return cmd;
    }

    public static Browser launch(Options options) {
        Path chromium = Processes.require(CHROMIUM, "apt-get install chromium");
        long t0 = System.nanoTime();
        Path dir;
        Path log;
        Path tmp;
        try {
            tmp = Files.createTempDirectory("ptun-chromium-tmp");
            dir = options.userDataDir() != null ? Files.createDirectories(options.userDataDir())
                    : Files.createTempDirectory("ptun-chromium");
            log = Files.createTempFile("ptun-chromium", ".log");
            Files.deleteIfExists(dir.resolve("DevToolsActivePort"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ProcessBuilder pb = Processes.builder(commandLine(chromium, options, dir), log);
        pb.environment().put("TMPDIR", tmp.toString()); // Chromium's own scratch files go where we clean up
        Process p = Processes.start(pb);
        try {
            Path portFile = dir.resolve("DevToolsActivePort");
            String[] lines = new String[1];
            Processes.await("Chromium's DevToolsActivePort file", Duration.ofSeconds(30), () -> {
                if (!p.isAlive()) {
                    throw new AssertionError("chromium exited with " + p.exitValue() + ": "
                            + Processes.tail(log, 4000));
                }
                try {
                    if (!Files.exists(portFile)) {
                        return false;
                    }
                    String[] l = Files.readString(portFile, StandardCharsets.UTF_8).split("\n");
                    if (l.length < 2 || l[1].isBlank()) {
                        return false;
                    }
                    lines[0] = "ws://127.0.0.1:" + l[0].trim() + l[1].trim();
                    return true;
                } catch (IOException e) {
                    return false;
                }
            });
            Cdp cdp = Cdp.connect(URI.create(lines[0]));
            return new Browser(options, dir, log, tmp, p, cdp,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        } catch (RuntimeException | Error e) {
            Processes.destroyTree(p);
            if (options.userDataDir() == null) {
                Processes.deleteTree(dir);
            }
            Processes.deleteTree(tmp);
            throw e;
        }
    }

    /** Opens a new tab and attaches to it (flattened session); proxy auth is answered from the options. */
    public Page newPage() {
        ObjectNode create = Cdp.params().put("url", "about:blank");
        String targetId = cdp.send("Target.createTarget", create).get("targetId").asText();
        JsonNode attached = cdp.send("Target.attachToTarget",
                Cdp.params().put("targetId", targetId).put("flatten", true));
        Page page = new Page(cdp, targetId, attached.get("sessionId").asText(), options.username(),
                options.password());
        pages.add(page);
        return page;
    }

    public Cdp cdp() {
        return cdp;
    }

    public Path userDataDir() {
        return userDataDir;
    }

    public long startMillis() {
        return startMillis;
    }

    public String version() {
        return cdp.send("Browser.getVersion", null).path("product").asText();
    }

    public String logTail() {
        return Processes.tail(log, 4000);
    }

    /**
     * Graceful {@code Browser.close} (Chromium writes its profile, localStorage included), bounded wait, then the
     * process tree is destroyed whatever happened.
     */
    @Override
    public void close() {
        try {
            if (!cdp.isClosed()) {
                try {
                    cdp.sendAsync("Browser.close", null, null);
                } catch (RuntimeException e) {
                    // already gone
                }
            }
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        } finally {
            cdp.close();
            Processes.destroyTree(process);
            try {
                Files.deleteIfExists(log);
            } catch (IOException e) {
                // best effort
            }
            if (!options.keepUserDataDir()) {
                Processes.deleteTree(userDataDir);
            }
            Processes.deleteTree(tmp);
        }
    }
}
