package dev.previewtunnel.cli;

import dev.previewtunnel.local.files.OwnerOnlyFiles;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The state directory of a long-running command (the ingress's credentials and control.json, the gateway's admin
 * token and revocations): created rwx------ if missing; an existing one must be ours and not writable by
 * group/others (exit 3 otherwise, docs/security.md "Local state"), readable by them is only warned about.
 */
public final class StateDirectory {
    private static final Logger log = LoggerFactory.getLogger(StateDirectory.class);

    private StateDirectory() {
    }

    /**
     * Prepares {@code dir} as above.
     *
     * @param ownerOnly what in it is owner-only anyway, for the warning ({@code the credentials file})
     */
    public static void prepare(Path dir, String ownerOnly) {
        ensure(dir);
        String shared = OwnerOnlyCheck.sharedPermissions(dir);
        if (shared != null) {
            log.warn("state directory {} is accessible by group/others ({}); consider chmod 700 {} ({} itself is "
                    + "owner-only)", dir, shared, dir, ownerOnly);
        }
    }

    /**
     * Prepares {@code dir} as above without the warning: for what comes before the command's own
     * {@link #prepare} (the audit file), so that the warning is given once.
     */
    public static void ensure(Path dir) {
        try {
            if (Files.exists(dir) && !Files.isDirectory(dir)) {
                throw new CliException(ExitCodes.REFUSED, "state directory " + dir + " exists and is not a directory");
            }
            OwnerOnlyFiles.ensureDirectory(dir);
            TrustedPaths.requireTrustedDirectory(dir, "state directory");
        } catch (TrustedPaths.UntrustedException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage());
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied creating state directory " + dir + " ("
                    + e.getFile() + ")");
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot create state directory " + dir + ": "
                    + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage()));
        }
    }
}
