package dev.previewtunnel.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
