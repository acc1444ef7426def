package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.FileModes;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.VerificationKeys;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * {@code keys-dir} and {@code verify-keys}: the keys 'serve' checks grants and tokens with exist, are private to
 * the user and parse; a key directory also gets its signing key checked ({@link SigningKeyCheck}).
 *
 * @param keys --keys: a key directory or a verify-keys.jwks.json file; null when not set
 */
public record KeysCheck(Path keys) {

    /** Reports the checks; returns the verify keys, or null when there are none to check tokens with. */
    public VerificationKeys run(DoctorReport report) {
        if (keys == null) {
            report.fail("keys-dir", ExitCodes.USAGE, "no key directory set: give --keys DIR (or PTUN_GATEWAY_KEYS); "
                    + "create one with: env-gateway keys init --dir DIR");
            return null;
        }
        Path verifyFile;
        if (Files.isRegularFile(keys)) {
            verifyFile = keys;
            report.ok("keys-dir", "keys given as the verify-keys file " + keys + " (no signing key needed here)");
        } else if (!Files.isDirectory(keys)) {
            report.fail("keys-dir", ExitCodes.REFUSED, "key directory " + keys + " does not exist: create it with "
                    + "'env-gateway keys init --dir " + keys + "' (or copy verify-keys.jwks.json there from "
                    + "where grants are issued)");
            return null;
        } else {
            verifyFile = keys.resolve(KeyDirectory.VERIFY_KEYS_FILE);
            String perms = FileModes.perms(keys);
            if (FileModes.shared(keys)) {
                report.warn("keys-dir", "key directory " + keys + " is accessible by group/others (" + perms
                        + "): chmod 700 " + keys);
            } else {
                report.ok("keys-dir", keys + " exists" + (perms.isEmpty() ? "" : " (" + perms + ")"));
            }
            new SigningKeyCheck(keys).run(report);
        }
        return load(report, verifyFile);
    }

    private VerificationKeys load(DoctorReport report, Path verifyFile) {
        try {
            VerificationKeys loaded = VerificationKeys.load(verifyFile);
            report.ok("verify-keys", verifyFile.getFileName() + " parses: " + loaded.kids().size() + " key(s), kid "
                    + String.join(", ", loaded.kids()));
            return loaded;
        } catch (NoSuchFileException e) {
            report.fail("verify-keys", ExitCodes.REFUSED, "no " + KeyDirectory.VERIFY_KEYS_FILE + " in " + keys
                    + ": run 'env-gateway keys init --dir " + keys + "' or copy the file from where grants are "
                    + "issued");
        } catch (AccessDeniedException e) {
            report.fail("verify-keys", ExitCodes.REFUSED, verifyFile + " is not readable by this user (permission "
                    + "denied): run doctor and serve as the user that owns the keys");
        } catch (IOException | RuntimeException e) {
            report.fail("verify-keys", ExitCodes.REFUSED, verifyFile + " does not parse as a JWK Set of Ed25519 "
                    + "public keys (" + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": "
                    + e.getMessage()) + "): restore it from the key directory where grants are issued");
        }
        return null;
    }
}
