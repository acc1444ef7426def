package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.DoctorReport.Status;
import dev.previewtunnel.cli.ExitCodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** doctor's listen check for {@code unix:PATH}: observes what serve would find there, changes nothing. */
class UnixListenCheckTest {
    @TempDir
    Path tmp;

    private static DoctorReport.Check check(String listen) {
        DoctorReport report = new DoctorReport(new PrintWriter(new StringWriter()), false);
        new ListenCheck(listen, "/tunnel", false, Duration.ofSeconds(2)).run(report);
        List<DoctorReport.Check> checks = report.checks();
        assertEquals(1, checks.size(), checks::toString);
        return checks.get(0);
    }

    @Test
    void eachStateOfTheSocketPathIsNamed() throws Exception {
        Path dir = tmp.resolve("run");
        Path socket = dir.resolve("gw.sock");
        DoctorReport.Check missingDir = check("unix:" + socket);
        assertEquals(Status.OK, missingDir.status());
        assertTrue(missingDir.message().contains("serve creates it rwx------"), missingDir::toString);
        assertTrue(Files.notExists(dir), "doctor creates nothing");

        Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        assertTrue(check("unix:" + socket).message().contains("is free: serve can bind it"));
        try (ServerSocketChannel live = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            live.bind(UnixDomainSocketAddress.of(socket));
            DoctorReport.Check answered = check("unix:" + socket);
            assertEquals(Status.WARN, answered.status(), answered::toString);
            assertTrue(answered.message().contains("a process already answers on unix socket unix:" + socket));
        }
        DoctorReport.Check stale = check("unix:" + socket);
        assertEquals(Status.OK, stale.status(), stale::toString);
        assertTrue(stale.message().contains("stale file nothing answers on: serve replaces it"), stale::toString);
        assertTrue(Files.exists(socket), "doctor replaces nothing");

        Files.delete(socket);
        Files.writeString(socket, "x");
        DoctorReport.Check file = check("unix:" + socket);
        assertEquals(Status.FAIL, file.status());
        assertEquals(ExitCodes.REFUSED, file.exitCode());

        Files.delete(socket);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        DoctorReport.Check open = check("unix:" + socket);
        assertEquals(Status.FAIL, open.status());
        assertTrue(open.message().contains("is writable by group/others"), open::toString);

        DoctorReport.Check relative = check("unix:gw.sock");
        assertEquals(ExitCodes.USAGE, relative.exitCode());
        assertTrue(relative.message().contains("the socket path must be absolute"), relative::toString);
    }
}
