package dev.previewtunnel.spikes.docs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.mux.local.JvmDefaults;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.docs.ShellBlocks.Block;
import dev.previewtunnel.spikes.docs.ShellBlocks.Command;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Runs every fenced shell block of docs/running.md and README.md (the convention: {@link ShellBlocks}) with the
 * built jars, in a sandbox: a HOME and XDG directories of its own, free ports instead of the documented ones
 * ({@link DocPlaceholders}), a {@code chromium} wrapper on PATH (headless, {@code --dump-dom}; without Chromium
 * it runs nothing, a failure when {@code CI=true}), every background process stopped at the end. Checks each
 * command's exit status against the doc ({@code # exit N}, else 0), the shape of its documented output (JSON
 * lines: their keys and {@code event}; text lines: their leading words, up to the first one holding a digit,
 * {@code /} or {@code :}), and that each audit event the doc quotes was written during the run.
 *
 * <p>A command that stays until Ctrl-C ({@link #UNTIL_STOPPED}) runs until its first line, which is compared with
 * the output the doc shows after it ({@link ShellBlocks#shownAfter}); a {@link LiveCheck} then checks it while it
 * runs, it gets SIGINT, must exit 0 within 30 s, and the check looks for anything it left running. README's
 * {@code open ssh://devbox} runs so against {@link LabDevbox} (a lab sshd as the host devbox).
 *
 * <p>Commands that cannot run here are in {@link #EXCLUDED}, each with its reason. The list cannot rot: an entry
 * that matches no command fails, and every excluded command still gets {@code bash -n} and a check that the
 * programs and files it names exist (and {@code --help} where given).
 */
class DocShellBlocksRunTest {
    /**
     * An upper bound, not the expected time: README.md ran in 41 s and running.md in 63 s on a 2-core machine with
     * a load average of 15 (mostly JVM starts of the CLI commands); without the C1-only flags below they did not
     * finish in 75 s there.
     */
    private static final long DOC_DEADLINE_SECONDS = 240;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A command not run, by its doc and the start of its text, with why, and a check that must exit 0. */
    record Exclusion(String doc, String startsWith, String reason, String check) {
    }

    static final List<Exclusion> EXCLUDED = List.of(
            new Exclusion("README.md", "mvn -B -q -DskipTests package && java",
                    "builds the reactor this test runs in; the demo it starts has its own test (DemoMainTest)",
                    "command -v mvn && test -f security-spikes/target/demo.jar"),
            new Exclusion("README.md", "mvn -B verify", "runs every test, this one included", "command -v mvn"),
            new Exclusion("README.md", "mvn -B -DskipTests -Pdist package",
                    "minutes of jlink and jpackage; .ci/package-check (run by .ci/run before this suite) builds the "
                            + "package with exactly this command",
                    "grep -q 'mvn -B -q -DskipTests -Pdist package' .ci/package-check && test -f dist/pom.xml"),
            new Exclusion("README.md", "sudo apt-get install ./dist/target/preview-tunnel_",
                    "installs into /usr and /opt of the machine running the tests (open would then find env-gateway "
                            + "on PATH); .ci/package-check installs it with apt-get, uses it and purges it",
                    "grep -q 'apt-get install -y -qq \"$deb\"' .ci/package-check"),
            new Exclusion("README.md", "desktop-ingress --version && env-gateway --version",
                    "the installed commands: .ci/package-check runs both --version with no java on PATH",
                    "grep -q 'in_package \"$p\" --version' .ci/package-check"),
            new Exclusion("README.md", "bench/run.sh", "builds, then about 25 minutes of load",
                    "test -x bench/run.sh && bash -n bench/run.sh"),
            new Exclusion("README.md", "bench/open-floor.sh", "minutes of load; needs nginx's stream module",
                    "test -x bench/open-floor.sh && bash -n bench/open-floor.sh"),
            new Exclusion("README.md", "bench/memory-floor.sh", "a minute of process starts; needs Node",
                    "test -x bench/memory-floor.sh && bash -n bench/memory-floor.sh"),
            new Exclusion("README.md", "bench/ssh-socket-floor.py", "minutes of load; needs sshd",
                    "bench/ssh-socket-floor.py --help"),
            new Exclusion("README.md", "bench/first-paint.sh", "minutes of load; needs sshd, Chromium and Vite",
                    "test -x bench/first-paint.sh && bash -n bench/first-paint.sh"),
            new Exclusion("docs/running.md", "mvn -B -q -DskipTests package",
                    "the reactor built the jars before this test", "command -v mvn"));

    /** A command that stays until Ctrl-C, by its doc and the start of its text. */
    record UntilStopped(String doc, String startsWith) {
    }

    static final List<UntilStopped> UNTIL_STOPPED = List.of(
            new UntilStopped("README.md", "java " + String.join(" ", JvmDefaults.INGRESS_FLAGS)
                    + " -jar desktop-ingress/target/desktop-ingress.jar open ssh://devbox"));

    /** What is checked of a command that stays until Ctrl-C: while it runs (after its first line), after its exit. */
    interface LiveCheck {
        /** Problems found while it runs; {@code stdout}: its output so far (its first line at least). */
        List<String> whileRunning(List<String> stdout) throws Exception;

        /** Problems found once it exited on SIGINT (what it left running, say). */
        List<String> afterExit() throws Exception;
    }

    @TempDir
    Path tmp;

    @Test
    void runningMd() throws Exception {
        runDoc(Path.of("docs", "running.md"), false);
    }

    /**
     * README's blocks assume a dev server on 127.0.0.1:5173 (running.md starts one itself): the sample app; and an
     * SSH host devbox: {@link LabDevbox}. Without sshd or Chromium, open is not run (said on stderr), a failure
     * when CI=true.
     */
    @Test
    void readme() throws Exception {
        runDoc(Path.of("README.md"), true);
    }

    /** Every entry of {@link #UNTIL_STOPPED} matches a command of its doc, and the doc shows that command's output. */
    @Test
    void everyUntilStoppedCommandIsInItsDocWithItsOutput() {
        List<String> problems = new ArrayList<>();
        for (UntilStopped u : UNTIL_STOPPED) {
            List<Command> matching = commands(Path.of(u.doc())).stream()
                    .filter(c -> c.text().strip().startsWith(u.startsWith())).toList();
            if (matching.isEmpty()) {
                problems.add(u.doc() + ": '" + u.startsWith() + "' in UNTIL_STOPPED matches no command any more");
            }
            for (Command c : matching) {
                if (ShellBlocks.shownAfter(DocsFiles.read(Path.of(u.doc())), c.line()).isEmpty()) {
                    problems.add(where(Path.of(u.doc()), c) + ": no output shown after it (an unlabelled block)");
                }
            }
        }
        assertEquals(List.of(), problems);
    }

    /** Every exclusion matches a command of its doc, passes bash -n, and its check exits 0. */
    @Test
    void everyExclusionStillMatchesAndItsCommandsExist() throws Exception {
        List<String> problems = new ArrayList<>();
        for (Exclusion e : EXCLUDED) {
            List<Command> matching = commands(Path.of(e.doc())).stream().filter(c -> matches(e, c)).toList();
            if (matching.isEmpty()) {
                problems.add(e.doc() + ": the exclusion '" + e.startsWith() + "' matches no command any more: "
                        + "remove it from DocShellBlocksRunTest.EXCLUDED (or fix its text)");
            }
            for (Command c : matching) {
                Shell syntax = shell(List.of("bash", "-n", "-c", c.text()), 10);
                if (syntax.exit != 0) {
                    problems.add(where(Path.of(e.doc()), c) + ": bash -n: " + syntax.output);
                }
            }
            Shell check = shell(List.of("bash", "-c", e.check()), 30);
            if (check.exit != 0) {
                problems.add(e.doc() + ": excluded '" + e.startsWith() + "': check `" + e.check() + "` exited "
                        + check.exit + ": " + check.output);
            }
        }
        assertEquals(List.of(), problems);
    }

    private void runDoc(Path doc, boolean devServer) throws Exception {
        Path sandbox = Files.createDirectories(tmp.resolve("home"));
        Path out = Files.createDirectories(tmp.resolve("out"));
        for (String dir : List.of("bin", "run", "tmp", ".local/state", ".config", ".cache")) {
            Files.createDirectories(sandbox.resolve(dir), PosixFilePermissions.asFileAttribute(
                    PosixFilePermissions.fromString("rwx------")));
        }
        chromiumWrapper(sandbox.resolve("bin/chromium"));
        DocPlaceholders placeholders = new DocPlaceholders(freePort(), freePort(), sandbox, DocsFiles.ROOT);
        try (AutoCloseable app = devServer ? SampleApp.start("127.0.0.1", placeholders.devPort())::close : () -> { };
             LabDevbox devbox = devServer ? devbox(sandbox, placeholders.devPort()) : null) {
            run(doc, sandbox, out, placeholders, devbox);
        }
    }

    /** The lab host devbox, or null (its commands then not run) when a component is missing and CI is not true. */
    private LabDevbox devbox(Path sandbox, int devPort) throws IOException {
        List<String> missing = LabDevbox.missing();
        if (!missing.isEmpty()) {
            if ("true".equals(System.getenv("CI"))) {
                throw new AssertionError("README's open ssh://devbox needs " + missing + " (.ci/run installs them)");
            }
            System.err.println("DocShellBlocksRunTest: README's open ssh://devbox not run: no " + missing + " here");
            return null;
        }
        return LabDevbox.start(Files.createDirectories(tmp.resolve("devbox")), sandbox.resolve("bin"),
                sandbox.resolve(".local/state/preview-tunnel"), devPort);
    }

    /** {@code live}: checks the doc's {@link #UNTIL_STOPPED} commands; null: they are not run. */
    private void run(Path doc, Path sandbox, Path out, DocPlaceholders placeholders, LiveCheck live)
            throws Exception {
        List<Command> commands = commands(doc);
        Predicate<Command> untilStopped = c -> UNTIL_STOPPED.stream()
                .anyMatch(u -> u.doc().equals(doc.toString()) && c.text().strip().startsWith(u.startsWith()));
        Predicate<Command> excluded = c -> EXCLUDED.stream()
                .anyMatch(e -> e.doc().equals(doc.toString()) && matches(e, c)) || (live == null && untilStopped.test(c));
        Path script = Files.writeString(tmp.resolve("doc.sh"), DocShellScript.of(commands, DocsFiles.ROOT,
                excluded, untilStopped, placeholders::apply));
        ProcessBuilder pb = new ProcessBuilder("bash", script.toString()).redirectErrorStream(true)
                .redirectOutput(tmp.resolve("script.log").toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("PTUN_"));
        pb.environment().putAll(DocShellScript.environment(sandbox, out));
        // Startup is most of the run: C1 only and the serial GC start the many short CLI JVMs faster.
        pb.environment().put("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC");
        Process bash = pb.start();
        boolean finished;
        List<String> problems = new ArrayList<>();
        try {
            List<Integer> checked = new ArrayList<>();
            for (int n = 0; n < commands.size(); n++) {
                if (!excluded.test(commands.get(n)) && untilStopped.test(commands.get(n))) {
                    checked.add(n);
                }
            }
            finished = awaitScript(bash, out, checked, live, problems);
        } finally {
            stopAll(bash, out.resolve("pids"));
        }
        if (!finished) {
            problems.add(doc + ": not done within " + DOC_DEADLINE_SECONDS + " s (the first command without an "
                    + "exit status below is where it hung)");
        }
        check(doc, commands, excluded, untilStopped, out, problems);
        checkQuotedAuditEvents(doc, sandbox, out, problems);
        assertEquals(List.of(), problems, () -> doc + " run in a sandbox with the jars; placeholders "
                + placeholders.shown() + "; script " + script);
    }

    /**
     * Waits for the script within the deadline; meanwhile runs {@code live}'s checks of the commands numbered
     * {@code checked} (those that stay until Ctrl-C): once one is ready ({@code N.ready}) its running checks, then
     * {@code N.stop} (the script sends SIGINT), once it exited ({@code N.rc}) its after-exit checks. False: the
     * deadline passed.
     */
    private static boolean awaitScript(Process bash, Path out, List<Integer> checked, LiveCheck live,
                                       List<String> problems) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DOC_DEADLINE_SECONDS);
        List<Integer> running = new ArrayList<>();
        List<Integer> stopping = new ArrayList<>();
        while (!bash.waitFor(100, TimeUnit.MILLISECONDS)) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            for (int n : checked) {
                if (!running.contains(n) && Files.exists(out.resolve(n + ".ready"))) {
                    running.add(n);
                    try {
                        problems.addAll(live.whileRunning(Files.readAllLines(out.resolve(n + ".out"))));
                    } finally {
                        Files.writeString(out.resolve(n + ".stop"), "");
                    }
                    stopping.add(n);
                } else if (stopping.contains(n) && Files.exists(out.resolve(n + ".rc"))) {
                    stopping.remove(Integer.valueOf(n));
                    problems.addAll(live.afterExit());
                }
            }
        }
        for (int n : stopping) {
            problems.addAll(live.afterExit());
        }
        return true;
    }

    private static void check(Path doc, List<Command> commands, Predicate<Command> excluded,
                              Predicate<Command> untilStopped, Path out, List<String> problems) throws IOException {
        for (int n = 0; n < commands.size(); n++) {
            Command c = commands.get(n);
            Path rc = out.resolve(n + ".rc");
            if (excluded.test(c)) {
                continue;
            }
            String err = Files.exists(out.resolve(n + ".err")) ? Files.readString(out.resolve(n + ".err")) : "";
            if (c.background()) {
                if (Files.exists(rc)) {
                    problems.add(where(doc, c) + ": a background command ended (or printed nothing in 60 s): "
                            + Files.readString(rc).strip() + "; stderr: " + plainLines(err));
                }
            } else if (!Files.exists(rc)) {
                problems.add(where(doc, c) + ": did not finish");
                return;
            } else {
                String exit = Files.readString(rc).strip(); // a number, or why there is none (ptun_until_stopped)
                if (!exit.equals(Integer.toString(c.expectedExit()))) {
                    problems.add(where(doc, c) + ": exit status expected " + c.expectedExit() + ", was " + exit
                            + "; stderr: " + plainLines(err));
                }
            }
            List<String> shown = untilStopped.test(c) ? ShellBlocks.shownAfter(DocsFiles.read(doc), c.line())
                    : c.output();
            if (!shown.isEmpty()) {
                List<String> actual = new ArrayList<>(Files.readAllLines(out.resolve(n + ".out")));
                if (c.expectedExit() != 0) {
                    actual.addAll(plain(err));
                }
                List<String> expected = shapes(shown);
                List<String> was = shapes(actual);
                if (!expected.equals(was)) {
                    problems.add(where(doc, c) + ": output expected (by shape) " + expected + ", was " + was);
                }
            }
        }
    }

    /** Each audit line the doc quotes ({"side":..,"event":..}) names an event that side wrote during the run. */
    private static void checkQuotedAuditEvents(Path doc, Path sandbox, Path out, List<String> problems)
            throws IOException {
        Pattern quoted = Pattern.compile("\\{\"side\":\"(gateway|ingress)\",\"event\":\"([a-z_]+)\"");
        Set<String> documented = new TreeSet<>();
        Matcher m = quoted.matcher(DocsFiles.read(doc));
        while (m.find()) {
            documented.add(m.group(1) + " " + m.group(2));
        }
        Set<String> written = new TreeSet<>();
        List<Path> files = new ArrayList<>();
        try (Stream<Path> s = Stream.concat(Files.walk(out), Files.walk(sandbox))) {
            s.filter(p -> p.toString().endsWith(".err") || p.toString().endsWith(".jsonl")
                    || p.toString().endsWith(".log")).forEach(files::add);
        }
        for (Path f : files) {
            // Lenient decoding: a file that happens to match need not be UTF-8 (a browser profile's log).
            for (String line : new String(Files.readAllBytes(f), java.nio.charset.StandardCharsets.UTF_8).lines()
                    .toList()) {
                if (line.startsWith("{\"ts\"") && line.contains("\"side\"")) {
                    JsonNode node = JSON.readTree(line);
                    written.add(node.path("side").asText() + " " + node.path("event").asText());
                }
            }
        }
        for (String event : documented) {
            if (!written.contains(event)) {
                problems.add(doc + ": quotes an audit line '" + event + "' that the run did not write (written: "
                        + written + ")");
            }
        }
    }

    /**
     * What is compared of output lines: a JSON object's sorted keys and its "event"; a text line's leading words
     * (at most two) up to the first holding a digit, '/' or ':'. Blank lines are dropped.
     */
    static List<String> shapes(List<String> lines) {
        List<String> shapes = new ArrayList<>();
        for (String line : lines) {
            String s = line.strip();
            if (s.isEmpty()) {
                continue;
            }
            if (s.startsWith("{") && s.endsWith("}")) {
                try {
                    JsonNode node = JSON.readTree(s);
                    Set<String> keys = new TreeSet<>();
                    node.fieldNames().forEachRemaining(keys::add);
                    shapes.add("json" + keys + (node.has("event") ? " event=" + node.get("event").asText() : ""));
                    continue;
                } catch (IOException e) {
                    // not JSON after all: a text line
                }
            }
            List<String> words = new ArrayList<>();
            for (String w : s.split("\\s+")) {
                if (words.size() == 2 || w.matches(".*[0-9/:].*")) {
                    break;
                }
                words.add(w);
            }
            shapes.add(String.join(" ", words));
        }
        return shapes;
    }

    private static List<Command> commands(Path doc) {
        return ShellBlocks.parse(DocsFiles.read(doc)).stream().flatMap(b -> b.commands().stream()).toList();
    }

    private static boolean matches(Exclusion e, Command c) {
        return c.text().strip().startsWith(e.startsWith());
    }

    private static String where(Path doc, Command c) {
        Block block = ShellBlocks.parse(DocsFiles.read(doc)).stream()
                .filter(b -> b.commands().contains(c)).findFirst().orElseThrow();
        return doc + ":" + c.line() + " (```" + block.language() + " block at line " + block.line() + ") `"
                + c.shown() + "`";
    }

    private static String plainLines(String err) {
        List<String> plain = plain(err);
        return plain.isEmpty() ? "(only JSON log lines)" : String.join(" | ", plain);
    }

    /** The lines of stderr that are not JSON logs, nor the JVM's note about JAVA_TOOL_OPTIONS. */
    private static List<String> plain(String err) {
        return err.lines().filter(l -> !l.startsWith("{") && !l.startsWith("Picked up JAVA_TOOL_OPTIONS")).toList();
    }

    /**
     * chromium on PATH: the real one headless, loading the page once and exiting; without one, nothing (a note
     * on stderr), or exit 127 when CI=true: there a missing browser is a failure, not a skip. Started by
     * {@code desktop-ingress open} (which drives it over {@code --remote-debugging-pipe} and stops it) it stays,
     * headless, with a DevTools port of its own (in the profile's DevToolsActivePort) for {@link LabDevbox}.
     */
    private static void chromiumWrapper(Path file) throws IOException {
        Files.writeString(file, """
                #!/bin/sh
                PATH=$(echo "$PATH" | cut -d: -f2-)
                real=$(command -v chromium || command -v chromium-browser || true)
                if [ -z "$real" ]; then
                  if [ "$CI" = true ]; then echo "chromium wrapper: no chromium on PATH" >&2; exit 127; fi
                  echo "chromium wrapper: no chromium here, not run" >&2; exit 0
                fi
                case " $* " in
                  *" --remote-debugging-pipe "*)
                    exec "$real" --headless --no-sandbox --disable-gpu --remote-debugging-port=0 "$@" ;;
                esac
                exec timeout 40 "$real" --headless --no-sandbox --disable-gpu --no-first-run --timeout=10000 --dump-dom "$@" >/dev/null
                """);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwx------"));
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Stops the script and every background process it recorded, with their children. */
    private static void stopAll(Process bash, Path pids) throws Exception {
        List<ProcessHandle> all = new ArrayList<>();
        if (Files.exists(pids)) {
            for (String pid : Files.readAllLines(pids)) {
                ProcessHandle.of(Long.parseLong(pid.strip())).ifPresent(all::add);
            }
        }
        all.add(bash.toHandle());
        List<ProcessHandle> tree = new ArrayList<>();
        for (ProcessHandle p : all) {
            p.descendants().forEach(tree::add);
            tree.add(p);
        }
        tree.forEach(ProcessHandle::destroy);
        for (Iterator<ProcessHandle> it = tree.iterator(); it.hasNext(); ) {
            ProcessHandle p = it.next();
            try {
                p.onExit().get(10, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                p.destroyForcibly();
            }
        }
    }

    private record Shell(int exit, String output) {
    }

    private static Shell shell(List<String> command, long seconds) throws Exception {
        Process p = new ProcessBuilder(command).directory(DocsFiles.ROOT.toFile()).redirectErrorStream(true).start();
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return new Shell(-1, "did not finish within " + seconds + " s");
        }
        String output = new String(p.getInputStream().readAllBytes()).strip();
        return new Shell(p.exitValue(), output.length() > 400 ? output.substring(0, 400) + "..." : output);
    }
}
