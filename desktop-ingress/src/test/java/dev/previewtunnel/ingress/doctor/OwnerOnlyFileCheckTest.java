package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.DoctorReport.Status;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A secret fails when group/others have any access; a trust file (the CA) only when they can write it. */
class OwnerOnlyFileCheckTest {
    @TempDir
    Path tmp;

    private Path file(String name, String perms) throws Exception {
        Path f = Files.writeString(tmp.resolve(name), "x");
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString(perms));
        return f;
    }

    private static DoctorReport.Check run(OwnerOnlyFileCheck check) {
        DoctorReport report = Reports.quiet();
        check.run(report);
        return Reports.only(report);
    }

    @Test
    void aSecretReadableByGroupFailsAndAnOwnerOnlyOneIsOk() throws Exception {
        Path shared = file("token", "rw-r-----");
        DoctorReport.Check fail = run(new OwnerOnlyFileCheck("token-file", shared, true, "a token"));
        assertEquals(Status.FAIL, fail.status());
        assertEquals(shared + " is accessible by group/others (rw-r-----); it holds a token: chmod 600 " + shared,
                fail.message());
        assertEquals(Status.OK, run(new OwnerOnlyFileCheck("token-file", file("ok", "rw-------"), true, "a token"))
                .status());
    }

    @Test
    void aReadableCaIsOkButAWritableOneFails() throws Exception {
        assertEquals(Status.OK, run(new OwnerOnlyFileCheck("gateway-ca", file("ca", "rw-r--r--"), false, "a CA"))
                .status());
        DoctorReport.Check fail = run(new OwnerOnlyFileCheck("gateway-ca", file("ca2", "rw-rw-r--"), false, "a CA"));
        assertEquals(Status.FAIL, fail.status());
        assertTrue(fail.message().contains("is writable by group/others (rw-rw-r--)"), fail.message());
    }

    @Test
    void filesNotGivenOrMissingAreLeftToTheChecksThatReadThem() {
        DoctorReport report = Reports.quiet();
        OwnerOnlyFileCheck.ofRun(null, Map.of("staging", new TunnelChecks.OwnGateway(null, tmp.resolve("missing"))),
                List.of(tmp.resolve("missing-grants")), null, null).forEach(c -> c.run(report));
        assertEquals(List.of(), report.checks());
    }
}
