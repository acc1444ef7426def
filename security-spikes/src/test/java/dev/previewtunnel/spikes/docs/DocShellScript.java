package dev.previewtunnel.spikes.docs;

import dev.previewtunnel.spikes.docs.ShellBlocks.Command;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The bash script that runs a doc's commands in order, in one shell (variables and jobs carry over, as when a
 * reader types them), each command's stdout, stderr and exit status to files {@code OUT/N.out}, {@code N.err},
 * {@code N.rc}. A background command ({@code &}) that is a {@code java} program is waited for until its first
 * line of output (the ready line) or 60 s; its pid goes to {@code OUT/pids} so the test can stop it. After each
 * command, {@code PTUN_PROXY} and {@code PTUN_GRANT_ID} are taken from any {@code "proxy"} / {@code "grantId"}
 * its output printed (the placeholders of {@link DocPlaceholders} use them).
 *
 * <p>A command that stays until Ctrl-C (README's {@code open}) runs in the background as its own job (job control
 * on: a non-interactive shell would start it with SIGINT ignored, and the JVM keeps an ignored SIGINT ignored);
 * after its first line the script writes {@code N.ready} and waits for the test's {@code N.stop} (its checks of
 * the running command done), then sends SIGINT and writes to {@code N.rc} its exit status, or why there is none.
 */
final class DocShellScript {
    private static final String PRELUDE = """
            ptun_after() { # N: remember the proxy address and grant id the command printed
              local p g
              p=$(sed -n 's/.*"proxy":"\\([^"]*\\)".*/\\1/p' "$PTUN_OUT/$1.out" | head -n 1)
              g=$(sed -n 's/.*"grantId":"\\([^"]*\\)".*/\\1/p' "$PTUN_OUT/$1.out" | head -n 1)
              [ -n "$p" ] && PTUN_PROXY=$p
              [ -n "$g" ] && PTUN_GRANT_ID=$g
              return 0
            }
            ptun_ready() { # N PID: wait for the first line of a background program, or for its end
              local i=0
              while [ $i -lt 600 ]; do
                [ -s "$PTUN_OUT/$1.out" ] && grep -q . "$PTUN_OUT/$1.out" && { ptun_after "$1"; return 0; }
                kill -0 "$2" 2>/dev/null || { wait "$2"; echo $? > "$PTUN_OUT/$1.rc"; return 0; }
                sleep 0.1; i=$((i + 1))
              done
              echo timeout > "$PTUN_OUT/$1.rc"
            }
            ptun_until_stopped() { # N PID: ready line, the test's checks (N.ready .. N.stop), SIGINT, exit status
              local i=0
              ptun_ready "$1" "$2"
              [ -e "$PTUN_OUT/$1.rc" ] && return 0
              touch "$PTUN_OUT/$1.ready"
              while [ ! -e "$PTUN_OUT/$1.stop" ] && [ $i -lt 1800 ]; do sleep 0.1; i=$((i + 1)); done
              kill -INT "$2"
              i=0
              while kill -0 "$2" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
              if kill -0 "$2" 2>/dev/null; then
                echo "still running 30 s after SIGINT" > "$PTUN_OUT/$1.rc"; kill -KILL "$2"; wait "$2"
              else
                wait "$2"; echo $? > "$PTUN_OUT/$1.rc"
              fi
              return 0
            }
            """;

    private DocShellScript() {
    }

    /**
     * The script for {@code commands} (numbered from 0), run in {@code root}; {@code excluded} commands are not run
     * (their number gets no files); {@code untilStopped} ones run until the test's stop, then get SIGINT;
     * {@code substitute} applies the placeholder table to a command's text.
     */
    static String of(List<Command> commands, Path root, Predicate<Command> excluded, Predicate<Command> untilStopped,
                     java.util.function.UnaryOperator<String> substitute) {
        StringBuilder s = new StringBuilder(PRELUDE).append("cd '").append(root).append("'\n");
        for (int n = 0; n < commands.size(); n++) {
            Command c = commands.get(n);
            if (excluded.test(c)) {
                s.append(": excluded ").append(n).append('\n');
                continue;
            }
            String text = substitute.apply(c.text());
            String files = " >\"$PTUN_OUT/" + n + ".out\" 2>\"$PTUN_OUT/" + n + ".err\"";
            if (untilStopped.test(c)) {
                s.append("set -m\n").append(ShellBlocks.withoutComment(text).strip()).append(files).append(" &\n")
                        .append("set +m\necho $! >> \"$PTUN_OUT/pids\"\n")
                        .append("ptun_until_stopped ").append(n).append(" $!; ptun_after ").append(n).append('\n');
            } else if (c.background()) {
                String code = ShellBlocks.withoutComment(text).strip();
                code = code.substring(0, code.length() - 1).strip(); // the trailing &
                s.append(code).append(files).append(" &\n")
                        .append("echo $! >> \"$PTUN_OUT/pids\"\n");
                s.append(isJava(code) ? "ptun_ready " + n + " $!\n" : "");
            } else {
                s.append("{ ").append(text).append("\n}").append(files).append("\n")
                        .append("echo $? > \"$PTUN_OUT/").append(n).append(".rc\"; ptun_after ").append(n)
                        .append('\n');
            }
        }
        return s.append("kill $(jobs -p) 2>/dev/null; wait\necho done > \"$PTUN_OUT/done\"\n").toString();
    }

    private static boolean isJava(String code) {
        return code.startsWith("java ") || code.matches("(?s)^[A-Z_]+=\\S+ java .*");
    }

    /** The environment of the sandbox: a HOME and XDG directories of its own, the wrappers first on PATH. */
    static Map<String, String> environment(Path sandbox, Path out) {
        return Map.of("HOME", sandbox.toString(),
                "XDG_STATE_HOME", sandbox.resolve(".local/state").toString(),
                "XDG_CONFIG_HOME", sandbox.resolve(".config").toString(),
                "XDG_CACHE_HOME", sandbox.resolve(".cache").toString(),
                "XDG_RUNTIME_DIR", sandbox.resolve("run").toString(),
                "TMPDIR", sandbox.resolve("tmp").toString(),
                "PATH", sandbox.resolve("bin") + ":" + System.getenv("PATH"),
                "PTUN_OUT", out.toString());
    }
}
