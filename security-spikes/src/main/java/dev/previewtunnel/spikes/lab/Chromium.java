package dev.previewtunnel.spikes.lab;

import dev.previewtunnel.ingress.browser.DevTools;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real headless Chromium with its DevTools port (chosen by Chromium, read from the profile's
 * {@code DevToolsActivePort}) and a {@link DevTools} connection to it. Its profile is a temporary directory unless the
 * caller gives one to keep; its scratch files ({@code TMPDIR}) go to a temporary directory too. {@link #close()}
 * shuts it down gracefully (the profile is flushed to disk), waits a bounded time, then stops the process tree and
 * deletes what it made.
 */
public final class Chromium implements AutoCloseable {
    public static final String NAME = "chromium";

    private final Process process;
    private final DevTools cdp;
    private final Path profile;
    private final boolean keepProfile;
    private final Path log;
    private final Path tmp;
    private final long startMillis;

    private Chromium(Process process, DevTools cdp, Path profile, boolean keepProfile, Path log, Path tmp,
                     long startMillis) {
        this.process = process;
        this.cdp = cdp;
        this.profile = profile;
        this.keepProfile = keepProfile;
        this.log = log;
        this.tmp = tmp;
        this.startMillis = startMillis;
    }

    /** The command line: headless, no background traffic, this profile, {@code flags}, DevTools on a free port. */
    public static List<String> commandLine(Path chromium, Path profile, List<String> flags) {
        List<String> cmd = new ArrayList<>(List.of(chromium.toString(),
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + profile));
        cmd.addAll(flags);
        cmd.add("--remote-debugging-port=0");
        cmd.add("about:blank");
        return cmd;
    }

    /** Starts Chromium with {@code flags}; {@code profile} null: a temporary profile deleted on close. */
    public static Chromium launch(List<String> flags, Path profile) {
        Path chromium = Processes.require(NAME, "apt-get install chromium");
        long t0 = System.nanoTime();
        Path dir;
        Path log;
        Path tmp;
        try {
            tmp = Files.createTempDirectory("ptun-chromium-tmp");
            dir = profile != null ? Files.createDirectories(profile) : Files.createTempDirectory("ptun-chromium");
            log = Files.createTempFile("ptun-chromium", ".log");
            Files.deleteIfExists(dir.resolve("DevToolsActivePort"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ProcessBuilder pb = Processes.builder(commandLine(chromium, dir, flags), log);
        pb.environment().put("TMPDIR", tmp.toString()); // Chromium's own scratch files go where we clean up
        Process p = Processes.start(pb);
        try {
            Path portFile = dir.resolve("DevToolsActivePort");
            URI[] url = new URI[1];
            Processes.await("Chromium's DevToolsActivePort file", Duration.ofSeconds(30), () -> {
                if (!p.isAlive()) {
                    throw new AssertionError("chromium exited with " + p.exitValue() + ": "
                            + Processes.tail(log, 4000));
                }
                DevTools.endpointIn(portFile).ifPresent(e -> url[0] = e);
                return url[0] != null;
            });
            DevTools cdp = DevTools.connect(url[0]);
            return new Chromium(p, cdp, dir, profile != null, log, tmp,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        } catch (RuntimeException | Error e) {
            Processes.destroyTree(p);
            if (profile == null) {
                Processes.deleteTree(dir);
            }
            Processes.deleteTree(tmp);
            Processes.deleteTree(log);
            throw e;
        }
    }

    public DevTools cdp() {
        return cdp;
    }

    public Path profile() {
        return profile;
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
            Processes.deleteTree(log);
            if (!keepProfile) {
                Processes.deleteTree(profile);
            }
            Processes.deleteTree(tmp);
        }
    }
}
