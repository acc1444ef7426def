package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.FileModes;
import dev.previewtunnel.grants.KeyDirectory;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code signing-key}: a signing key in the key directory is owner-only (whoever reads it can mint grants) and its
 * kid is among the verify keys. None at all is fine: serve needs only the public keys.
 */
public record SigningKeyCheck(Path dir) {

    public void run(DoctorReport report) {
        Path signing = dir.resolve(KeyDirectory.SIGNING_KEY_FILE);
        if (!Files.exists(signing)) {
            report.ok("signing-key", "no signing key in " + dir + " (fine: serve only needs the public keys; "
                    + "grants are issued where the signing key is)");
            return;
        }
        if (FileModes.shared(signing)) {
            report.fail("signing-key", ExitCodes.REFUSED, "signing key " + signing + " is readable by group/others ("
                    + FileModes.perms(signing) + "): anyone who can read it can mint grants; chmod 600 " + signing
                    + ", and rotate it (env-gateway keys rotate --dir " + dir + ") if others may have copied it");
            return;
        }
        try {
            KeyDirectory.open(dir);
            report.ok("signing-key", signing.getFileName() + " is owner-only (" + FileModes.perms(signing)
                    + ") and its kid is among the verify keys");
        } catch (AccessDeniedException e) {
            report.fail("signing-key", ExitCodes.REFUSED, signing + " is not readable by this user (permission "
                    + "denied)");
        } catch (IOException | RuntimeException e) {
            report.fail("signing-key", ExitCodes.REFUSED, "the key directory " + dir + " is inconsistent: "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
    }
}
