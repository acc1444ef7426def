package dev.previewtunnel.spikes.lab;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/**
 * Starting, waiting for and always stopping the real external programs the end-to-end runs and the benchmark
 * use (sshd, nginx, Chromium, the CLIs): bounded waits, output captured to a file, whole process trees stopped.
 */
public final class Processes {
    private Processes() {
    }

    /**
     * Finds an executable on the PATH (or an absolute path). A missing component fails the run, in CI and on a
     * developer's machine alike, with the install hint: these runs are never skipped (.ci/run installs them).
     */
    public static Path require(String name, String installHint) {
        Path found = find(name);
        if (found == null) {
            throw new AssertionError("required component '" + name + "' is missing (" + installHint
                    + "); the end-to-end runs never skip: install it (see .ci/run)");
        }
        return found;
    }

    public static Path find(String name) {
        if (name.contains("/")) {
            Path p = Path.of(name);
            return Files.isExecutable(p) ? p : null;
        }
        String path = System.getenv().getOrDefault("PATH", "/usr/local/bin:/usr/bin:/bin");
        for (String dir : (path + ":/usr/sbin:/sbin").split(":")) {
            if (dir.isEmpty()) {
                continue;
            }
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    /** A process builder with an environment free of proxy variables (so no tool routes around the test). */
    public static ProcessBuilder builder(List<String> command, Path log) {
        ProcessBuilder pb = new ProcessBuilder(command);
        Map<String, String> env = pb.environment();
        for (String k : List.of("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                "no_proxy", "NO_PROXY")) {
            env.remove(k);
        }
        pb.redirectErrorStream(true);
        if (log != null) {
            pb.redirectOutput(log.toFile());
        }
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        return pb;
    }

    public static Process start(ProcessBuilder pb) {
        try {
            return pb.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + pb.command(), e);
        }
    }

    /** Result of a short command run to completion. */
    public record Result(int exitCode, String output) {
    }

    /** Runs a short command to completion (bounded), output captured. */
    public static Result run(List<String> command, Path workDir, Duration timeout) {
        try {
            Path out = Files.createTempFile("ptun-cmd", ".log");
            try {
                ProcessBuilder pb = builder(command, out);
                if (workDir != null) {
                    pb.directory(workDir.toFile());
                }
                Process p = start(pb);
                try {
                    if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                        throw new IllegalStateException(command + " did not finish within " + timeout + ": "
                                + tail(out, 2000));
                    }
                } finally {
                    destroyTree(p);
                }
                return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
            } finally {
                Files.deleteIfExists(out);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + command, e);
        }
    }

    /** As {@link #run}, failing on a non-zero exit with the command's output. */
    public static Result runOk(List<String> command, Path workDir, Duration timeout) {
        Result r = run(command, workDir, timeout);
        if (r.exitCode() != 0) {
            throw new IllegalStateException(command + " exited " + r.exitCode() + ": " + r.output());
        }
        return r;
    }

    /** Gracefully (SIGTERM, bounded wait) then forcibly stops a process and everything it started. */
    public static void destroyTree(Process p) {
        if (p == null) {
            return;
        }
        List<ProcessHandle> descendants = new ArrayList<>(p.descendants().toList());
        p.destroy();
        try {
            if (!p.waitFor(5, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
        }
        descendants.addAll(p.descendants().toList());
        for (ProcessHandle h : descendants) {
            if (h.isAlive()) {
                h.destroyForcibly();
            }
        }
        for (ProcessHandle h : descendants) {
            try {
                h.onExit().get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                // reported by the caller's own checks if it matters
            }
        }
    }

    /** Polls {@code condition} every few milliseconds until true or the deadline (then fails with {@code what}). */
    public static void await(String what, Duration timeout, BooleanSupplier condition) {
        if (!poll(what, timeout, condition)) {
            throw new AssertionError("timed out after " + timeout + " waiting for " + what);
        }
    }

    /** Whether {@code condition} holds within {@code timeout}, polled as {@link #await} does (false, not a failure). */
    public static boolean within(Duration timeout, BooleanSupplier condition) {
        return poll("a condition", timeout, condition);
    }

    private static boolean poll(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(25));
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for " + what);
            }
        }
        return true;
    }

    /** Waits until something accepts TCP connections on host:port (connection attempts, never sleeps). */
    public static void awaitPort(String host, int port, Duration timeout, Process owner, Path log) {
        await(host + ":" + port + " to accept connections", timeout, () -> {
            if (owner != null && !owner.isAlive()) {
                throw new AssertionError(owner.info().command().orElse("process") + " exited with "
                        + owner.exitValue() + " before listening on " + port + ": " + tail(log, 4000));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), 200);
                return true;
            } catch (IOException e) {
                return false;
            }
        });
    }

    /** A currently free loopback port (for programs that need a port on their command line). */
    public static int freePort() {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(false);
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static String tail(Path file, int chars) {
        if (file == null) {
            return "";
        }
        try {
            if (!Files.exists(file)) {
                return "(no " + file + ")";
            }
            String s = Files.readString(file, StandardCharsets.ISO_8859_1);
            return s.length() <= chars ? s : "..." + s.substring(s.length() - chars);
        } catch (IOException e) {
            return "(cannot read " + file + ": " + e + ")";
        }
    }

    public static void deleteTree(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // best effort: a browser may still be writing its cache
                }
            });
        } catch (IOException | UncheckedIOException e) {
            // best effort
        }
    }
}
