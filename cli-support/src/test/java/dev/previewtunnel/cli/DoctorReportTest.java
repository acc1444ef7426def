package dev.previewtunnel.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The doctor's output: one aligned line per check (or one JSON object), exit code of the first failure. */
class DoctorReportTest {
    @Test
    void linesAndExitCode() {
        StringWriter text = new StringWriter();
        DoctorReport r = new DoctorReport(new PrintWriter(text), false);
        r.ok("keys-dir", "/k exists");
        r.warn("state-dir", "shared\nwith others");
        r.fail("target", ExitCodes.UNREACHABLE, "nothing listens");
        r.fail("token", ExitCodes.REFUSED, "refused");
        r.skip("grant", "none");
        r.summary("x");
        assertEquals(List.of(
                "ok    keys-dir          /k exists",
                "warn  state-dir         shared with others",
                "fail  target            nothing listens",
                "fail  token             refused",
                "skip  grant             none",
                "x doctor: 2 failed, 1 warning"), text.toString().lines().toList());
        assertEquals(ExitCodes.UNREACHABLE, r.exitCode(), "the first failure's code");
    }

    @Test
    void jsonLinesAndAllGood() throws Exception {
        StringWriter text = new StringWriter();
        DoctorReport r = new DoctorReport(new PrintWriter(text), true);
        r.ok("clock", "fine");
        r.summary("x");
        assertEquals("{\"check\":\"clock\",\"status\":\"ok\",\"message\":\"fine\"}", text.toString().strip());
        new ObjectMapper().readTree(text.toString());
        assertEquals(0, r.exitCode());
    }

    @Command(name = "x")
    static final class X {
    }

    @Test
    void settingsAreLoadedAsTheCheckedCommandWouldAndProblemsAreConfigChecks(@TempDir Path tmp) throws Exception {
        CommandSpec spec = new CommandLine(new X()).getCommandSpec();
        Set<String> keys = Set.of("pool");
        DoctorReport good = new DoctorReport(new PrintWriter(new StringWriter()), false);
        Path file = Files.writeString(tmp.resolve("c.json"), "{\"pool\": \"two\"}");
        Settings s = good.loadSettings(spec, file, "PTUN_T_", keys);
        assertEquals(List.of(new DoctorReport.Check("config", DoctorReport.Status.OK, "settings from " + file
                + " (flags and PTUN_T_* variables override it)", ExitCodes.OK)), good.checks());
        assertNull(good.setting(() -> s.integer("pool", null, 2)), "an invalid value is a failed check, not a throw");
        assertEquals(DoctorReport.Status.FAIL, good.checks().get(1).status());
        assertEquals(ExitCodes.USAGE, good.exitCode());

        DoctorReport bad = new DoctorReport(new PrintWriter(new StringWriter()), false);
        Path unknown = Files.writeString(tmp.resolve("u.json"), "{\"pol\": 1}");
        assertNull(bad.loadSettings(spec, unknown, "PTUN_T_", keys));
        assertEquals("config", bad.checks().get(0).id());
        assertTrue(bad.checks().get(0).message().startsWith("unknown key \"pol\""), bad.checks().toString());
        assertEquals(ExitCodes.USAGE, bad.exitCode());
    }
}
