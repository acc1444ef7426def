package dev.previewtunnel.spikes.cli;

import dev.previewtunnel.mux.local.FatalErrors;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One real {@code java -jar} process of the project's command-line tools, its stdout and stderr captured line by
 * line (stdout by a thread of its own, so the pipe cannot fill and block the process; stderr through a file).
 */
final class CliProcess implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String EOF = "\u0000eof";

    final Process process;
    private final List<String> stdout = new ArrayList<>();
    private final LinkedBlockingQueue<String> stdoutLines = new LinkedBlockingQueue<>();
    private final Thread outReader;
    private final Path stderrFile;

    private CliProcess(Process process, Path stderrFile) {
        this.process = process;
        this.stderrFile = stderrFile;
        outReader = pump(process.getInputStream(), stdout, stdoutLines);
    }

    /** The project root: the nearest directory above the working directory holding both services' modules. */
    static Path projectRoot() {
        for (Path q = Path.of("").toAbsolutePath(); q != null; q = q.getParent()) {
            if (Files.isDirectory(q.resolve("env-gateway")) && Files.isDirectory(q.resolve("desktop-ingress"))) {
                return q;
            }
        }
        throw new AssertionError("no project root above " + Path.of("").toAbsolutePath());
    }

    /**
     * The built jar of a module; a missing jar fails (the reactor packages it before security-spikes' tests).
     * {@code -Dptun.cli.root=DIR} takes the jars of another checkout instead (a build of an older commit, to see
     * a test fail on the code before a fix).
     */
    static Path jar(String module) {
        String root = System.getProperty("ptun.cli.root");
        Path jar = (root == null || root.isEmpty() ? projectRoot() : Path.of(root))
                .resolve(module + "/target/" + module + ".jar");
        if (!Files.isRegularFile(jar)) {
            throw new AssertionError(jar + " is missing: the reactor's package phase builds it before these tests; "
                    + "run mvn verify (with -am), not mvn test");
        }
        return jar;
    }

    private static Path stateHome;

    private static synchronized Path stateHome() throws IOException {
        if (stateHome == null) {
            stateHome = Files.createTempDirectory("ptun-cli-state");
        }
        return stateHome;
    }

    /** Deletes the state directory the processes of this JVM used (their stderr files, any state left). */
    static synchronized void deleteStateHome() throws IOException {
        if (stateHome == null) {
            return;
        }
        try (var files = Files.walk(stateHome)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        stateHome = null;
    }

    private static final java.util.Set<String> LONG_RUNNING = java.util.Set.of("run", "serve", "open");

    /**
     * Starts a command; a long-running one ({@code run}, {@code serve}, {@code open}) given no {@code --audit-file}
     * gets {@code --audit-file -}: its audit events then come on stderr, where these tests read them (by default
     * they would go to audit.jsonl in its state directory).
     */
    static CliProcess start(String module, String... args) throws IOException {
        if (args.length > 0 && LONG_RUNNING.contains(args[0])
                && java.util.Arrays.stream(args).noneMatch(a -> a.startsWith("--audit-file"))) {
            List<String> withAudit = new ArrayList<>(List.of(args));
            withAudit.addAll(List.of("--audit-file", "-"));
            return startAsGiven(module, withAudit.toArray(String[]::new));
        }
        return startAsGiven(module, args);
    }

    /** Starts a command with exactly {@code args} (the audit where the command's defaults put it). */
    static CliProcess startAsGiven(String module, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx128m"));
        command.addAll(FatalErrors.JVM_FLAGS); // the shipped launch flags
        command.addAll(List.of("-jar", jar(module).toString()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command);
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("PTUN_") || k.toLowerCase(java.util.Locale.ROOT).endsWith("_proxy"));
        // State files (the ingress's credentials) go to a directory of the test's, not the user's ~/.local/state.
        env.put("XDG_STATE_HOME", stateHome().toString());
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        // stderr to a file: what the process wrote in its last moments (a shutdown hook) is all there at exit.
        Path err = Files.createTempFile(stateHome(), module, ".stderr");
        pb.redirectError(err.toFile());
        return new CliProcess(pb.start(), err);
    }

    /** Runs a command to its end (bounded) and returns it, output complete. */
    static CliProcess run(Duration timeout, String module, String... args) throws Exception {
        CliProcess p = start(module, args);
        p.awaitExit(timeout);
        return p;
    }

    /** Reads stdout until a JSON line with {@code "event":"ready"} (bounded); fails with what was printed. */
    JsonNode awaitReady(Duration timeout) throws Exception {
        return awaitEvent("ready", timeout);
    }

    /** Reads stdout until a JSON line with this {@code event} (bounded); fails with what was printed. */
    JsonNode awaitEvent(String event, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            String line = left > 0 ? stdoutLines.poll(left, TimeUnit.NANOSECONDS) : null;
            if (line == null || line.equals(EOF)) {
                throw new AssertionError("no " + event + " line on stdout" + (line == null ? " within " + timeout : "")
                        + "; stderr: " + stderr());
            }
            if (line.startsWith("{")) {
                JsonNode json = JSON.readTree(line);
                if (event.equals(json.path("event").asText())) {
                    return json;
                }
            }
        }
    }

    /** Waits for the exit (bounded, failing if it does not come) and for both pipes to be read to their end. */
    int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("process did not exit within " + timeout + "; stderr: " + stderr());
        }
        outReader.join(timeout.toMillis());
        return process.exitValue();
    }

    /** Sends {@code signal} (STOP, CONT, ...) with kill(1): the JDK can send only TERM and KILL. */
    void signal(String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid()))
                .redirectErrorStream(true).start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            kill.destroyForcibly();
            throw new AssertionError("kill -" + signal + " " + process.pid() + " failed");
        }
    }

    String stdout() {
        synchronized (stdout) {
            return String.join("\n", stdout);
        }
    }

    String stderr() {
        return String.join("\n", stderrLines());
    }

    List<String> stderrLines() {
        try {
            return Files.readAllLines(stderrFile, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static Thread pump(InputStream in, List<String> sink, LinkedBlockingQueue<String> lines) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    synchronized (sink) {
                        sink.add(line);
                    }
                    if (lines != null) {
                        lines.add(line);
                    }
                }
            } catch (IOException e) {
                // The process went away: what was read is kept.
            } finally {
                if (lines != null) {
                    lines.add(EOF);
                }
            }
        }, "cli-pipe");
        t.setDaemon(true);
        t.start();
        return t;
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
        }
    }
}
