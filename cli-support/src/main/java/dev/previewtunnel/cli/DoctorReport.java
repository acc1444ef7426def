package dev.previewtunnel.cli;


import dev.previewtunnel.json.JsonTrees;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The output of a {@code doctor} command: one line per check, printed as soon as the check is done,
 *
 * <pre>
 *   ok    keys-dir        /home/dev/.ptun-keys exists (rwx------)
 *   fail  signing-key     ... is readable by group/others (rw-r--r--); fix: chmod 600 ...
 * </pre>
 *
 * or, with {@code --json}, one JSON object per line ({@code {"check":..,"status":..,"message":..}}). A failed
 * check carries the exit code of its kind (2 unreachable, 3 refused); the doctor exits with the first failure's
 * code, or 0 when every check is ok, warn or skip. Messages must never contain a secret.
 */
public final class DoctorReport {

    public enum Status { OK, WARN, FAIL, SKIP }

    /** One check's result. */
    public record Check(String id, Status status, String message, int exitCode) {
        public String statusText() {
            return status.name().toLowerCase(Locale.ROOT);
        }
    }

    private final PrintWriter out;
    private final boolean json;
    private final List<Check> checks = new ArrayList<>();

    public DoctorReport(PrintWriter out, boolean json) {
        this.out = out;
        this.json = json;
    }

    public void ok(String id, String message) {
        add(new Check(id, Status.OK, message, ExitCodes.OK));
    }

    public void warn(String id, String message) {
        add(new Check(id, Status.WARN, message, ExitCodes.OK));
    }

    public void skip(String id, String message) {
        add(new Check(id, Status.SKIP, message, ExitCodes.OK));
    }

    /**
     * The doctor's settings, as the command it checks would load them ({@link Settings#load}); a config file that
     * cannot be used is reported as the failed check {@code config} and null is returned, and a file in use is
     * reported as an ok check that names it.
     */
    public Settings loadSettings(picocli.CommandLine.Model.CommandSpec spec, java.nio.file.Path configFlag,
                                 String envPrefix, java.util.Set<String> keys) {
        Settings s;
        try {
            s = Settings.load(spec, configFlag, envPrefix, keys);
        } catch (picocli.CommandLine.ParameterException e) {
            fail("config", ExitCodes.USAGE, e.getMessage());
            return null;
        }
        if (s.file() != null) {
            ok("config", "settings from " + s.file() + " (flags and " + envPrefix + "* variables override it)");
        }
        return s;
    }

    /** A setting read with {@code read}; an invalid one is reported as the failed check {@code config}, and null. */
    public <T> T setting(java.util.function.Supplier<T> read) {
        try {
            return read.get();
        } catch (picocli.CommandLine.ParameterException e) {
            fail("config", ExitCodes.USAGE, e.getMessage());
            return null;
        }
    }

    /** A failed check; {@code exitCode} is {@link ExitCodes#UNREACHABLE} or {@link ExitCodes#REFUSED}. */
    public void fail(String id, int exitCode, String message) {
        add(new Check(id, Status.FAIL, message, exitCode));
    }

    private void add(Check check) {
        checks.add(check);
        String message = ErrorHandling.oneLine(check.message());
        if (json) {
            out.println(JsonTrees.write(JsonTrees.object()
                    .put("check", check.id())
                    .put("status", check.statusText())
                    .put("message", message)));
        } else {
            out.println(String.format(Locale.ROOT, "%-5s %-17s %s", check.statusText(), check.id(), message));
        }
        out.flush();
    }

    public List<Check> checks() {
        return List.copyOf(checks);
    }

    /** The first failure's exit code, or 0. */
    public int exitCode() {
        for (Check c : checks) {
            if (c.status() == Status.FAIL) {
                return c.exitCode();
            }
        }
        return ExitCodes.OK;
    }

    /** A closing line for humans: how many checks failed or warned. Not printed in JSON mode. */
    public void summary(String program) {
        if (json) {
            return;
        }
        long failed = checks.stream().filter(c -> c.status() == Status.FAIL).count();
        long warned = checks.stream().filter(c -> c.status() == Status.WARN).count();
        out.println(failed == 0 && warned == 0 ? program + " doctor: everything checked is fine"
                : program + " doctor: " + failed + " failed, " + warned + " warning" + (warned == 1 ? "" : "s"));
        out.flush();
    }
}
