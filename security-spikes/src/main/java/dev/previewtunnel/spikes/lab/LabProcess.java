package dev.previewtunnel.spikes.lab;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/**
 * A long-running child process of a lab: its output goes to {@code <dir>/<name>.log} (stdout, when a ready line is
 * awaited, is scanned for that JSON line and then copied there). Every process started here is stopped with its
 * descendants on {@link #close()}, at {@link #destroyAll()} and by a JVM shutdown hook, whatever happened.
 */
public final class LabProcess implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<LabProcess> LIVE = new CopyOnWriteArrayList<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(LabProcess::destroyAll, "lab-destroy-processes"));
    }

    private final String name;
    private final Process process;
    private final Path log;
    private final CompletableFuture<JsonNode> ready = new CompletableFuture<>();

    private LabProcess(String name, Process process, Path log, Predicate<JsonNode> isReady) {
        this.name = name;
        this.process = process;
        this.log = log;
        Thread pump = new Thread(() -> pumpStdout(isReady), "lab-stdout-" + name);
        pump.setDaemon(true);
        pump.start();
    }

    /**
     * Starts {@code command} in {@code dir} (without proxy variables, see {@link Processes#builder}); {@code isReady}
     * picks the ready line among the JSON lines on stdout (null: none awaited, stdout goes to the log too).
     */
    public static LabProcess start(String name, List<String> command, Path dir, Predicate<JsonNode> isReady) {
        return start(name, command, Map.of(), dir, isReady);
    }

    /** As above, with {@code env} added to the environment (e.g. a lab token, kept off the command line). */
    public static LabProcess start(String name, List<String> command, Map<String, String> env, Path dir,
                                   Predicate<JsonNode> isReady) {
        Path log = dir.resolve(name + ".log");
        ProcessBuilder pb = Processes.builder(command, null)
                .directory(dir.toFile())
                .redirectErrorStream(false)
                .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
        pb.environment().putAll(env);
        if (isReady == null) {
            pb.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        }
        try {
            Files.writeString(log, "$ " + String.join(" ", command) + "\n");
            LabProcess proc = new LabProcess(name, pb.start(), log, isReady);
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
                Files.writeString(log, "[stdout] " + line + "\n", StandardOpenOption.APPEND);
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
    public JsonNode awaitReady(Duration timeout) {
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

    /** Waits (bounded) until this process accepts connections on loopback {@code port}; fails if it exits first. */
    public void awaitPort(int port, Duration timeout) {
        Processes.awaitPort("127.0.0.1", port, timeout, process, log);
    }

    public String name() {
        return name;
    }

    public Process process() {
        return process;
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public long pid() {
        return process.pid();
    }

    public Path log() {
        return log;
    }

    public String tail(int chars) {
        return Processes.tail(log, chars);
    }

    @Override
    public void close() {
        LIVE.remove(this);
        Processes.destroyTree(process);
    }

    public static void destroyAll() {
        for (LabProcess p : new ArrayList<>(LIVE)) {
            p.close();
        }
    }
}
