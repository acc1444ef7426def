package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.DoctorReport.Status;
import dev.previewtunnel.cli.ExitCodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TLS files serve would use, with certificates made by the JDK's keytool: expired fails, expiring within two
 * weeks or a key others can read warns, a valid pair is ok; half a pair is a usage error; no TLS reports nothing.
 */
class TlsFilesCheckTest {
    @TempDir
    Path tmp;

    /** A PEM certificate valid from {@code start} (keytool's -startdate, e.g. "-30d") for {@code days}. */
    private Path certificate(String name, String start, int days) throws Exception {
        Path store = tmp.resolve(name + ".p12");
        Path pem = tmp.resolve(name + ".pem");
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        run(List.of(keytool, "-genkeypair", "-alias", "a", "-keyalg", "EC", "-dname", "CN=localhost", "-keystore",
                store.toString(), "-storetype", "PKCS12", "-storepass", "ptun-test", "-startdate", start, "-validity",
                String.valueOf(days)));
        run(List.of(keytool, "-exportcert", "-rfc", "-alias", "a", "-keystore", store.toString(), "-storepass",
                "ptun-test", "-file", pem.toString()));
        return pem;
    }

    private static void run(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "keytool did not finish");
        String output = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.exitValue(), output);
    }

    private Path key(String perms) throws Exception {
        Path key = Files.writeString(tmp.resolve("key-" + perms + ".pem"), "not parsed by the check");
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString(perms));
        return key;
    }

    private static List<DoctorReport.Check> check(Path cert, Path key) {
        DoctorReport report = new DoctorReport(new PrintWriter(new StringWriter()), false);
        new TlsFilesCheck(cert, key, Clock.systemUTC()).run(report);
        return report.checks();
    }

    @Test
    void expiredFailsExpiringSoonWarnsValidIsOk() throws Exception {
        Path ownerOnly = key("rw-------");
        DoctorReport.Check expired = check(certificate("expired", "-30d", 10), ownerOnly).get(0);
        assertEquals(Status.FAIL, expired.status(), expired::toString);
        assertEquals(ExitCodes.REFUSED, expired.exitCode());
        assertTrue(expired.message().contains("expired at"), expired.message());

        DoctorReport.Check soon = check(certificate("soon", "-1d", 7), ownerOnly).get(0);
        assertEquals(Status.WARN, soon.status(), soon::toString);
        assertTrue(soon.message().contains("expires soon"), soon.message());

        Path valid = certificate("valid", "-1d", 100);
        DoctorReport.Check ok = check(valid, ownerOnly).get(0);
        assertEquals(Status.OK, ok.status(), ok::toString);

        DoctorReport.Check sharedKey = check(valid, key("rw-r--r--")).get(0);
        assertEquals(Status.WARN, sharedKey.status(), sharedKey::toString);
        assertTrue(sharedKey.message().contains("is readable by group/others (rw-r--r--): chmod 600"),
                sharedKey.message());
    }

    @Test
    void halfAPairIsAUsageErrorAndNoTlsIsNotReported() throws Exception {
        DoctorReport.Check half = check(tmp.resolve("c.pem"), null).get(0);
        assertEquals(ExitCodes.USAGE, half.exitCode());
        assertEquals(List.of(), check(null, null));
        DoctorReport.Check notPem = check(Files.writeString(tmp.resolve("garbage.pem"), "garbage"),
                key("rw-------")).get(0);
        assertTrue(notPem.message().contains("it must be a PEM certificate chain"), notPem.message());
    }
}
