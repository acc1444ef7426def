package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.VerifierPolicy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

/**
 * {@code clock}: this host's clock did not jump back behind the time the verify keys were written (else every
 * grant looks not yet valid). The skew against the issuing host is measured from the desktop
 * ('desktop-ingress doctor'), not here.
 *
 * @param keys --keys, or null
 */
public record ClockCheck(Path keys, Clock clock) {

    public void run(DoctorReport report) {
        Instant now = clock.instant();
        if (keys != null) {
            Path verifyFile = Files.isDirectory(keys) ? keys.resolve(KeyDirectory.VERIFY_KEYS_FILE) : keys;
            try {
                Instant modified = Files.getLastModifiedTime(verifyFile).toInstant();
                if (modified.isAfter(now.plus(Duration.ofMinutes(1)))) {
                    report.fail("clock", ExitCodes.REFUSED, "this host's clock (" + now.truncatedTo(ChronoUnit.SECONDS)
                            + ") is behind the time " + verifyFile.getFileName() + " was written (" + modified
                            .truncatedTo(ChronoUnit.SECONDS) + "): the clock jumped back; fix it (timedatectl "
                            + "set-ntp true), or every grant looks not-yet-valid");
                    return;
                }
            } catch (IOException e) {
                // reported by the keys checks
            }
        }
        report.ok("clock", "local time " + now.truncatedTo(ChronoUnit.SECONDS) + "; grants are checked with "
                + VerifierPolicy.defaults().clockSkew().toSeconds() + " s of allowance, so keep this host and the "
                + "issuing host on NTP ('desktop-ingress doctor' measures the skew from the desktop)");
    }
}
