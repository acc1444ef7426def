package dev.previewtunnel.gateway.cli;

import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs the CLI in-process, exactly as the jar's main does, with System.out/err captured and restored. */
final class CliHarness {
    private CliHarness() {
    }

    record Result(int exitCode, String out, String err) {
        List<String> outLines() {
            return out.lines().toList();
        }

        List<String> errLines() {
            return err.lines().toList();
        }

        /** Exactly one line on stderr, starting with the CLI's prefix; returns it. */
        String singleErrorLine() {
            List<String> lines = errLines();
            assertEquals(1, lines.size(), () -> "expected one stderr line, got:\n" + err);
            assertTrue(lines.get(0).startsWith("env-gateway: "), lines.get(0));
            return lines.get(0);
        }

        /** The one error line, ignoring JSON log lines of a gateway running in the same JVM. */
        String cliErrorLine() {
            List<String> lines = errLines().stream().filter(l -> !l.startsWith("{")).toList();
            assertEquals(1, lines.size(), () -> "expected one error line, got:\n" + err);
            assertTrue(lines.get(0).startsWith("env-gateway: "), lines.get(0));
            return lines.get(0);
        }

        @Override
        public String toString() {
            return "exit " + exitCode + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
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
            int code = new CommandLine(new GatewayMain()).execute(args);
            return new Result(code, c.out(), c.err());
        }
    }

    /** {@code serve} running on a background thread; {@link #close()} stops it and returns its exit code. */
    static final class RunningServe implements AutoCloseable {
        final ServeCommand serve;
        final Captured captured;
        private final FutureTask<Integer> task;
        private Integer exitCode;

        private RunningServe(String... args) {
            this.captured = new Captured(); // first: picocli binds System.out/err when the CommandLine is built
            CommandLine commandLine = new CommandLine(new GatewayMain());
            this.serve = commandLine.getSubcommands().get("serve").getCommand();
            this.task = new FutureTask<>(() -> commandLine.execute(args));
            Thread t = new Thread(task, "test-serve");
            t.setDaemon(true);
            t.start();
        }

        /** Starts serve and waits until it is ready or has failed. */
        static RunningServe start(String... args) throws InterruptedException {
            RunningServe running = new RunningServe(args);
            if (!running.serve.awaitStarted(30, TimeUnit.SECONDS)) {
                running.captured.close();
                throw new AssertionError("serve neither became ready nor failed within 30 s");
            }
            return running;
        }

        /** Exit code once serve has returned (after a failure, or after {@link #close()}). */
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
                serve.stop();
                awaitExit();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while stopping serve", e);
            } finally {
                captured.close();
            }
        }
    }
}
