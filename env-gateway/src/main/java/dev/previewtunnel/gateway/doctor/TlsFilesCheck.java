package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.FileModes;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

/**
 * {@code tls}: the TLS certificate and key serve would use are given together, readable, not expired (warned two
 * weeks ahead) and the key is owner-only. Nothing is reported when serve runs without TLS.
 */
public record TlsFilesCheck(Path cert, Path key, Clock clock) {

    public void run(DoctorReport report) {
        if (cert == null && key == null) {
            return;
        }
        if (cert == null || key == null) {
            report.fail("tls", ExitCodes.USAGE, "tls-cert and tls-key must be given together");
            return;
        }
        if (!Files.isReadable(key)) {
            report.fail("tls", ExitCodes.REFUSED, "TLS key " + key + " does not exist or is not readable");
            return;
        }
        try (InputStream in = Files.newInputStream(cert)) {
            X509Certificate x509 = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
            Instant notAfter = x509.getNotAfter().toInstant();
            Instant now = clock.instant();
            if (notAfter.isBefore(now)) {
                report.fail("tls", ExitCodes.REFUSED, "TLS certificate " + cert + " expired at " + notAfter
                        + ": renew it");
            } else if (FileModes.shared(key)) {
                report.warn("tls", "TLS key " + key + " is readable by group/others (" + FileModes.perms(key)
                        + "): chmod 600 " + key);
            } else if (notAfter.isBefore(now.plus(Duration.ofDays(14)))) {
                report.warn("tls", "TLS certificate " + cert + " expires soon, at " + notAfter + ": renew it");
            } else {
                report.ok("tls", "certificate " + cert.getFileName() + " valid until " + notAfter
                        + "; key is owner-only");
            }
        } catch (IOException | CertificateException | ClassCastException e) {
            report.fail("tls", ExitCodes.REFUSED, "cannot read the TLS certificate " + cert + " ("
                    + e.getClass().getSimpleName() + "): it must be a PEM certificate chain");
        }
    }
}
