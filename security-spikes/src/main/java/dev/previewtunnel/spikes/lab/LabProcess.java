package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/**
 * A real child process of the runner: its stdout is scanned for a JSON ready line (and then copied to a log
 * file), stderr goes to the log file. Every process started here is destroyed with its descendants on
 * {@link #close()}, at {@link #destroyAll()} and by a JVM shutdown hook, whatever happened.
 */
final class Proc implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<Proc> LIVE = new CopyOnWriteArrayList<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Proc::destroyAll, "bench-destroy-processes"));
    }

    final String name;
    final Process process;
    final Path log;
    private final CompletableFuture<JsonNode> ready = new CompletableFuture<>();

    private Proc(String name, Process process, Path log, Predicate<JsonNode> isReady) {
        this.name = name;
        this.process = process;
        this.log = log;
        Thread pump = new Thread(() -> pumpStdout(isReady), "bench-stdout-" + name);
        pump.setDaemon(true);
        pump.start();
    }

    /** Starts {@code command}; {@code isReady} picks the ready line among the JSON lines on stdout (null: none). */
    static Proc start(String name, List<String> command, Path dir, Predicate<JsonNode> isReady) {
        Path log = dir.resolve(name + ".log");
        ProcessBuilder pb = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        if (isReady == null) {
            pb.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        }
        try {
            Files.writeString(log, "$ " + String.join(" ", command) + "\n");
            Process p = pb.start();
            Proc proc = new Proc(name, p, log, isReady);
            LIVE.add(proc);
            return proc;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name + ": " + command, e);
        }
    }

    private void pumpStdout(Predicate<JsonNode> isReady) {
        if (isReady == null) {
            return;
        }
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                Files.writeString(log, "[stdout] " + line + "\n", java.nio.file.StandardOpenOption.APPEND);
                if (!ready.isDone() && line.startsWith("{")) {
                    try {
                        JsonNode node = JSON.readTree(line);
                        if (isReady.test(node)) {
                            ready.complete(node);
                        }
                    } catch (IOException e) {
                        // not JSON: ignore
                    }
                }
            }
        } catch (IOException e) {
            // process gone
        } finally {
            ready.completeExceptionally(new IllegalStateException(name + " exited before it was ready"));
        }
    }

    /** The ready line; fails with the log's tail if the process exits first or takes longer than {@code timeout}. */
    JsonNode awaitReady(Duration timeout) {
        try {
            return ready.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause().getMessage() + ": " + tail(3000), e);
        } catch (TimeoutException e) {
            throw new IllegalStateException(name + " did not become ready within " + timeout + ": "
                    + tail(3000), e);
        }
    }

    long pid() {
        return process.pid();
    }

    String tail(int chars) {
        try {
            String s = Files.readString(log, StandardCharsets.UTF_8);
            return s.length() <= chars ? s : s.substring(s.length() - chars);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    @Override
    public void close() {
        LIVE.remove(this);
        destroy(process);
    }

    static void destroyAll() {
        for (Proc p : new ArrayList<>(LIVE)) {
            p.close();
        }
    }

    /** SIGTERM to the process and its descendants, a bounded wait, then SIGKILL. */
    static void destroy(Process p) {
        if (p == null) {
            return;
        }
        List<ProcessHandle> tree = new ArrayList<>();
        p.toHandle().descendants().forEach(tree::add);
        tree.add(p.toHandle());
        for (ProcessHandle h : tree) {
            h.destroy();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        for (ProcessHandle h : tree) {
            try {
                long left = Math.max(1, deadline - System.nanoTime());
                h.onExit().get(left, TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                // killed below
            }
            if (h.isAlive()) {
                h.destroyForcibly();
            }
        }
    }

    /** Runs a short command to completion; returns its stdout+stderr. Fails on a non-zero exit. */
    static String run(List<String> command, Path dir, Duration timeout) {
        try {
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
            if (dir != null) {
                pb.directory(dir.toFile());
            }
            Process p = pb.start();
            CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
                try {
                    return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                } catch (IOException e) {
                    return "";
                }
            });
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                destroy(p);
                throw new IllegalStateException("timed out: " + command);
            }
            String text = out.get(5, TimeUnit.SECONDS);
            if (p.exitValue() != 0) {
                throw new IllegalStateException("exit " + p.exitValue() + " from " + command + ": " + text);
            }
            return text;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("no output from " + command, e);
        }
    }
}
