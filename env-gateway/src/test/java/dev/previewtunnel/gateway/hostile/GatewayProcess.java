package dev.previewtunnel.gateway.hostile;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.testing.ReadyLines;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The real gateway ({@code env-gateway serve}, the jar's main class) in a child JVM started from this test's class
 * path with a small heap and the shipped JVM flags ({@link FatalErrors#JVM_FLAGS}), as the systemd unit runs it.
 * Its stderr goes to a file; its stdout is read for the ready line.
 */
public final class GatewayProcess implements AutoCloseable {
    final Process process;
    final JsonNode ready;
    private final Path stderr;

    private GatewayProcess(Process process, JsonNode ready, Path stderr) {
        this.process = process;
        this.ready = ready;
        this.stderr = stderr;
    }

    /** {@code java}, {@code jvmArgs}, the shipped JVM flags and this test's class path: add a main class and its arguments. */
    public static List<String> javaCommand(List<String> jvmArgs) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmArgs);
        command.addAll(FatalErrors.JVM_FLAGS);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        return command;
    }

    /** Starts {@code serve} on 127.0.0.1:0 and waits (bounded) for its ready line. */
    static GatewayProcess start(Path dir, Path keys, String env, List<String> jvmArgs, String... extra)
            throws Exception {
        return start("dev.previewtunnel.gateway.cli.GatewayMain", dir, keys, env, jvmArgs, extra);
    }

    /** As above with another main class that takes GatewayMain's arguments (a test program wrapping it). */
    static GatewayProcess start(String mainClass, Path dir, Path keys, String env, List<String> jvmArgs,
                                String... extra) throws Exception {
        List<String> command = javaCommand(jvmArgs);
        command.addAll(List.of(mainClass, "serve", "--keys", keys.toString(),
                "--env", env, "--listen", "127.0.0.1:0", "--state-dir", dir.resolve("state").toString()));
        command.addAll(List.of(extra));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().keySet().removeIf(k -> k.startsWith("PTUN_"));
        Path err = Files.createTempFile(dir, "gateway", ".stderr");
        pb.redirectError(err.toFile());
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        Process p = pb.start();
        String line = ReadyLines.await(p, Duration.ofSeconds(30));
        if (line == null) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError("gateway not ready; stderr: " + Files.readString(err));
        }
        return new GatewayProcess(p, JsonTrees.parse(line), err);
    }

    int port() {
        String listen = ready.path("listen").asText();
        return Integer.parseInt(listen.substring(listen.lastIndexOf(':') + 1));
    }

    /** A value in KiB of /proc/PID/status ({@code VmRSS}, {@code VmHWM}), or -1 once the process is gone. */
    long statusKib(String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(process.pid()), "status"))) {
                if (line.startsWith(field + ":")) {
                    return Long.parseLong(line.substring(field.length() + 1).replace("kB", "").trim());
                }
            }
        } catch (IOException | RuntimeException gone) {
            return -1;
        }
        return -1;
    }

    /**
     * Samples {@code VmRSS} every 100 ms until {@code done} completes or {@code bound} has passed since {@code
     * startNanos}; returns the highest reading, at least {@code fromKib}.
     */
    long peakRssKibUntil(CompletableFuture<?> done, long startNanos, Duration bound, long fromKib)
            throws InterruptedException {
        long peakKib = fromKib;
        while (!done.isDone() && elapsedSince(startNanos).compareTo(bound) < 0) {
            peakKib = Math.max(peakKib, statusKib("VmRSS"));
            try {
                done.get(100, TimeUnit.MILLISECONDS);
            } catch (TimeoutException | ExecutionException notYetOrFailed) {
                // sample again; a failed future counts as done
            }
        }
        return peakKib;
    }

    String stderr() throws IOException {
        return Files.readString(stderr);
    }

    @Override
    public void close() throws Exception {
        process.destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    static Duration elapsedSince(long nanos) {
        return Duration.ofNanos(System.nanoTime() - nanos);
    }
}
