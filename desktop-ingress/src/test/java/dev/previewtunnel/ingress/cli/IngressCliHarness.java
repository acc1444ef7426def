package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs the CLI in-process, exactly as the jar's main does, with System.out/err captured and restored. */
final class IngressCliHarness {
    private static final ObjectMapper JSON = new ObjectMapper();

    private IngressCliHarness() {
    }

    record Result(int exitCode, String out, String err) {
        List<String> outLines() {
            return out.lines().toList();
        }

        /** Exactly one line on stderr, starting with the CLI's prefix; returns it. */
        String singleErrorLine() {
            List<String> lines = err.lines().toList();
            assertEquals(1, lines.size(), () -> "expected one stderr line, got:\n" + err);
            assertTrue(lines.get(0).startsWith("desktop-ingress: "), lines.get(0));
            return lines.get(0);
        }

        /**
         * The one error line among stderr lines that may also hold JSON log lines of an ingress running in the same
         * JVM (the control commands run while a 'run' is running in-process).
         */
        String cliErrorLine() {
            List<String> lines = err.lines().filter(l -> !l.startsWith("{")).toList();
            assertEquals(1, lines.size(), () -> "expected one error line, got:\n" + err);
            assertTrue(lines.get(0).startsWith("desktop-ingress: "), lines.get(0));
            return lines.get(0);
        }

        /** A usage error: exit 1, nothing on stdout, one line on stderr; returns that line. */
        String usageError() {
            assertEquals(1, exitCode, this::toString);
            assertEquals("", out, this::toString);
            return singleErrorLine();
        }

        @Override
        public String toString() {
            return "exit " + exitCode + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    /** Neither stream contains any of the secrets (a token, a grant, a password). */
    static void assertNoSecrets(String out, String err, String... secrets) {
        for (String secret : secrets) {
            assertTrue(secret.length() > 8, "a real secret");
            assertFalse(out.contains(secret), () -> "secret on stdout:\n" + out);
            assertFalse(err.contains(secret), () -> "secret on stderr:\n" + err);
        }
    }

    /** The formatted messages of the JSON log lines on stderr (logback escapes '/', so search these). */
    static List<String> logMessages(String err) {
        List<String> messages = new ArrayList<>();
        for (String line : err.lines().toList()) {
            if (!line.startsWith("{")) {
                continue;
            }
            try {
                JsonNode node = JSON.readTree(line);
                if (node.has("formattedMessage")) {
                    messages.add(node.get("level").asText() + " " + node.get("formattedMessage").asText());
                }
            } catch (Exception e) {
                throw new AssertionError("stderr line is not JSON: " + line, e);
            }
        }
        return messages;
    }

    /** Redirects System.out/err until closed. */
    static final class Captured implements AutoCloseable {
        private final PrintStream oldOut = System.out;
        private final PrintStream oldErr = System.err;
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final ByteArrayOutputStream err = new ByteArrayOutputStream();

        Captured() {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        }

        String out() {
            synchronized (out) {
                return out.toString(StandardCharsets.UTF_8);
            }
        }

        String err() {
            synchronized (err) {
                return err.toString(StandardCharsets.UTF_8);
            }
        }

        @Override
        public void close() {
            System.out.flush();
            System.err.flush();
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    static Result run(String... args) {
        try (Captured c = new Captured()) {
            int code = new CommandLine(new IngressMain()).execute(args);
            return new Result(code, c.out(), c.err());
        }
    }

    /** {@code run} on a background thread; {@link #close()} stops it and returns its exit code. */
    static final class RunningIngress implements AutoCloseable {
        final RunCommand command;
        final Captured captured;
        private final FutureTask<Integer> task;
        private Integer exitCode;

        private RunningIngress(String... args) {
            this.captured = new Captured(); // first: picocli binds System.out/err when the CommandLine is built
            CommandLine commandLine = new CommandLine(new IngressMain());
            this.command = commandLine.getSubcommands().get("run").getCommand();
            this.task = new FutureTask<>(() -> commandLine.execute(args));
            Thread t = new Thread(task, "test-ingress-run");
            t.setDaemon(true);
            t.start();
        }

        /** Starts {@code run} and waits until it is ready or has failed. */
        static RunningIngress start(String... args) throws InterruptedException {
            RunningIngress running = new RunningIngress(args);
            if (!running.command.awaitStarted(30, TimeUnit.SECONDS)) {
                running.captured.close();
                throw new AssertionError("run neither became ready nor failed within 30 s");
            }
            return running;
        }

        /** The ready line, parsed; fails unless stdout holds exactly that one complete line. */
        JsonNode readyLine() throws Exception {
            String out = captured.out();
            assertEquals(1, out.lines().count(), () -> "stdout:\n" + out + "\nstderr:\n" + captured.err());
            assertTrue(out.endsWith("\n"), "the ready line is complete when ready is signalled");
            return JSON.readTree(out.lines().findFirst().orElseThrow());
        }

        int awaitExit() throws InterruptedException, ExecutionException, TimeoutException {
            if (exitCode == null) {
                exitCode = task.get(60, TimeUnit.SECONDS);
            }
            return exitCode;
        }

        Result result() throws InterruptedException, ExecutionException, TimeoutException {
            int code = awaitExit();
            return new Result(code, captured.out(), captured.err());
        }

        @Override
        public void close() throws ExecutionException, TimeoutException {
            try {
                command.stop();
                awaitExit();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while stopping run", e);
            } finally {
                captured.close();
            }
        }
    }
}
