package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.DoctorReport;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A {@link DoctorReport} that prints nowhere, and its one check, for the tests of single checks. */
final class Reports {
    private Reports() {
    }

    static DoctorReport quiet() {
        return new DoctorReport(new PrintWriter(new StringWriter()), false);
    }

    static DoctorReport.Check only(DoctorReport report) {
        List<DoctorReport.Check> checks = report.checks();
        assertEquals(1, checks.size(), checks::toString);
        return checks.get(0);
    }
}
