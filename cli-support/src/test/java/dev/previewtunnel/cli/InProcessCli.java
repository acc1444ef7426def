package dev.previewtunnel.cli;

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

/**
 * Runs a CLI in-process, exactly as the jar's main does, with System.out/err captured and restored. Shared by the
 * env-gateway and desktop-ingress CLI tests (cli-support's test-jar); each tool has a thin harness naming its main
 * class and its error prefix.
 */
public final class InProcessCli {
    private static final ObjectMapper JSON = new ObjectMapper();

    private InProcessCli() {
    }

    /** What one command did; {@code errorPrefix} is the tool's prefix of its error line ("env-gateway: "). */
    public record Result(int exitCode, String out, String err, String errorPrefix) {
        public List<String> outLines() {
            return out.lines().toList();
        }

        public List<String> errLines() {
            return err.lines().toList();
        }

        /**
         * Exactly one plain line on stderr, starting with the CLI's prefix; returns it. JSON log lines are not
         * counted: a gateway or ingress running in the same test JVM (a shared fixture, or one a previous test
         * just closed) writes its asynchronous log and audit lines to the same captured stream, and the CLI's own
         * error line is never JSON. CI once failed on exactly that: an audit "connection_closed" line from the
         * previous test's tunnel landed inside a usage-error capture.
         */
        public String cliErrorLine() {
            List<String> lines = errLines().stream().filter(l -> !l.startsWith("{")).toList();
            assertEquals(1, lines.size(), () -> "expected one error line, got:\n" + err);
            assertTrue(lines.get(0).startsWith(errorPrefix), lines.get(0));
            return lines.get(0);
        }

        /** A usage error: exit 1, nothing on stdout, one line on stderr; returns that line. */
        public String usageError() {
            assertEquals(1, exitCode, this::toString);
            assertEquals("", out, this::toString);
            return cliErrorLine();
        }

        /** A refusal: exit 3, nothing on stdout, one line on stderr; returns that line. */
        public String refusal() {
            assertEquals(ExitCodes.REFUSED, exitCode, this::toString);
            assertEquals("", out, this::toString);
            return cliErrorLine();
        }

        @Override
        public String toString() {
            return "exit " + exitCode + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    /** {@code base} followed by {@code more}: a command line with extra flags. */
    public static String[] concat(String[] base, String... more) {
        String[] out = new String[base.length + more.length];
        System.arraycopy(base, 0, out, 0, base.length);
        System.arraycopy(more, 0, out, base.length, more.length);
        return out;
    }

    /** The JSON log line on stderr whose formatted message is {@code message}; fails when there is none. */
    public static JsonNode logLine(String err, String message) {
        for (String line : err.lines().toList()) {
            if (!line.startsWith("{")) {
                continue;
            }
            try {
                JsonNode node = JSON.readTree(line);
                if (message.equals(node.path("formattedMessage").asText())) {
                    return node;
                }
            } catch (Exception e) {
                throw new AssertionError("stderr line is not JSON: " + line, e);
            }
        }
        throw new AssertionError("no '" + message + "' log line in:\n" + err);
    }

    /** A structured field of a log line: logback's {@code kvpList} is an array of one-key objects. */
    public static String keyValue(JsonNode logLine, String key) {
        for (JsonNode pair : logLine.path("kvpList")) {
            if (pair.has(key)) {
                return pair.get(key).asText();
            }
        }
        throw new AssertionError("no " + key + " in " + logLine);
    }

    /**
     * Each option {@code --KEY} of {@code command} ends its description with {@code (default: VALUE)} where VALUE
     * is {@code defaults.get(KEY)}, and {@code doc} (a page of docs/) names it as {@code `--KEY`}: the help and the
     * docs cannot drift from the default objects.
     */
    public static void assertDefaultsDescribed(picocli.CommandLine.Model.CommandSpec command,
                                               java.util.Collection<String> keys, java.util.Map<String, String> defaults,
                                               String doc) {
        java.util.regex.Pattern stated = java.util.regex.Pattern.compile("\\(default: ([^)]+)\\)\\.?$");
        assertEquals(new java.util.TreeSet<>(keys), new java.util.TreeSet<>(defaults.keySet()), "keys and defaults");
        for (String key : keys) {
            picocli.CommandLine.Model.OptionSpec option = command.findOption("--" + key);
            assertTrue(option != null, "no option --" + key);
            String description = String.join(" ", option.description());
            java.util.regex.Matcher m = stated.matcher(description);
            assertTrue(m.find(), () -> key + ": no '(default: ...)' in " + description);
            assertEquals(defaults.get(key), m.group(1), "--help default of " + key);
            assertTrue(doc.contains("`--" + key + "`"), "the docs list --" + key);
        }
    }

    /** Neither stream contains any of the secrets (a token, a grant, a password). */
    public static void assertNoSecrets(String out, String err, String... secrets) {
        for (String secret : secrets) {
            assertTrue(secret.length() > 8, "a real secret");
            for (String fragment : secretFragments(secret)) {
                assertFalse(out.contains(fragment), () -> "a secret (or part of one) on stdout:\n" + out);
                assertFalse(err.contains(fragment), () -> "a secret (or part of one) on stderr:\n" + err);
            }
        }
    }

    /** Fragments of a secret this long are searched for too: long enough to be the secret's, not chance. */
    public static final int FRAGMENT = 16;

    /**
     * What must not appear of {@code secret}: the whole, a JWT's signature segment (what makes a truncated or
     * re-encoded token usable again, or identifies it), and every {@value #FRAGMENT}-character substring (a
     * truncated or partly masked secret is still a leak).
     */
    public static List<String> secretFragments(String secret) {
        List<String> fragments = new ArrayList<>();
        fragments.add(secret);
        String[] parts = secret.split("\\.");
        if (parts.length == 3 && !parts[2].isEmpty()) {
            fragments.add(parts[2]);
        }
        for (int i = 0; i + FRAGMENT <= secret.length() && secret.length() > FRAGMENT; i++) {
            fragments.add(secret.substring(i, i + FRAGMENT));
        }
        return fragments;
    }

    /** The formatted messages of the JSON log lines on stderr (logback escapes '/', so search these). */
    public static List<String> logMessages(String err) {
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
    public static final class Captured implements AutoCloseable {
        private final PrintStream oldOut = System.out;
        private final PrintStream oldErr = System.err;
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final ByteArrayOutputStream err = new ByteArrayOutputStream();

        public Captured() {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        }

        public String out() {
            synchronized (out) {
                return out.toString(StandardCharsets.UTF_8);
            }
        }

        public String err() {
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

    private static final java.util.Set<String> LONG_RUNNING = java.util.Set.of("run", "serve", "open");

    /**
     * {@code args} with {@code --audit-file -} added for a long-running command ({@code run}, {@code serve},
     * {@code open}) given neither --audit-file nor --state-dir: its audit default is audit.jsonl in the default
     * state directory, the home of whoever runs the tests; on stderr it is where these tests read it. A command
     * given a state directory writes its audit there, as it would for a user. So a config file's audit-file
     * counts only in a test that passes --state-dir too.
     */
    public static String[] auditToStderrUnlessPlaced(String... args) {
        if (args.length == 0 || !LONG_RUNNING.contains(args[0])) {
            return args;
        }
        for (String a : args) {
            if (a.startsWith("--audit-file") || a.startsWith("--state-dir")) {
                return args;
            }
        }
        return concat(args, "--audit-file", "-");
    }

    /** Runs the command line of {@code main} (the tool's top-level picocli command) with {@code args}. */
    public static Result run(Object main, String errorPrefix, String... args) {
        try (Captured c = new Captured()) {
            int code = new CommandLine(main).execute(auditToStderrUnlessPlaced(args));
            return new Result(code, c.out(), c.err(), errorPrefix);
        }
    }

    /**
     * A long-running subcommand ({@code serve}, {@code run}) on a background thread; {@link #close()} stops it and
     * waits for its exit code. Subclasses say how to wait for its start and how to stop it.
     */
    public abstract static class Running<C> implements AutoCloseable {
        public final C command;
        public final Captured captured;
        private final String subcommand;
        private final String errorPrefix;
        private final FutureTask<Integer> task;
        private Integer exitCode;

        protected Running(Object main, String subcommand, String threadName, String errorPrefix, String... args) {
            this.subcommand = subcommand;
            this.errorPrefix = errorPrefix;
            this.captured = new Captured(); // first: picocli binds System.out/err when the CommandLine is built
            CommandLine commandLine = new CommandLine(main);
            this.command = commandLine.getSubcommands().get(subcommand).getCommand();
            String[] placed = auditToStderrUnlessPlaced(args);
            this.task = new FutureTask<>(() -> commandLine.execute(placed));
            Thread t = new Thread(task, threadName);
            t.setDaemon(true);
            t.start();
        }

        /** True once the command is ready or has failed, within the timeout. */
        protected abstract boolean awaitStarted(C command, long timeout, TimeUnit unit) throws InterruptedException;

        /** Stops the command as its shutdown hook does. */
        protected abstract void stop(C command);

        /** Waits until {@code running} is ready or has failed; returns it. */
        protected static <R extends Running<?>> R started(R running) throws InterruptedException {
            Running<?> r = running;
            if (!r.awaitStartedNow()) {
                r.captured.close();
                throw new AssertionError(r.subcommand + " neither became ready nor failed within 30 s");
            }
            return running;
        }

        private boolean awaitStartedNow() throws InterruptedException {
            return awaitStarted(command, 30, TimeUnit.SECONDS);
        }

        /** The ready line, parsed; fails unless stdout holds exactly that one complete line. */
        public JsonNode readyLine() throws Exception {
            String out = captured.out();
            assertEquals(1, out.lines().count(), () -> "stdout:\n" + out + "\nstderr:\n" + captured.err());
            assertTrue(out.endsWith("\n"), "the ready line is complete when ready is signalled");
            return JSON.readTree(out.lines().findFirst().orElseThrow());
        }

        /** Exit code once the command has returned (after a failure, or after {@link #close()}). */
        public int awaitExit() throws InterruptedException, ExecutionException, TimeoutException {
            if (exitCode == null) {
                exitCode = task.get(60, TimeUnit.SECONDS);
            }
            return exitCode;
        }

        public Result result() throws InterruptedException, ExecutionException, TimeoutException {
            int code = awaitExit();
            return new Result(code, captured.out(), captured.err(), errorPrefix);
        }

        @Override
        public void close() throws ExecutionException, TimeoutException {
            try {
                stop(command);
                awaitExit();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while stopping " + subcommand, e);
            } finally {
                captured.close();
            }
        }
    }
}
