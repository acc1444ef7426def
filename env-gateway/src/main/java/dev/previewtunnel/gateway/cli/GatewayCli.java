package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.grants.KeyDirectory;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/** Gateway-specific command helpers (the generic ones are in {@link dev.previewtunnel.cli.Cli}). */
final class GatewayCli {
    private GatewayCli() {
    }

    /**
     * Opens a key directory; every problem with it (missing, unreadable, group/other-readable signing key,
     * invalid content) is a refusal, exit code 3. Messages come from the grants module, which never quotes
     * key material.
     */
    static KeyDirectory openKeys(Path dir) {
        try {
            return KeyDirectory.open(dir);
        } catch (NoSuchFileException e) {
            throw new CliException(ExitCodes.REFUSED, "no keys in " + dir + " (" + e.getFile()
                    + " does not exist); create them with: env-gateway keys init --dir " + dir);
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied reading " + e.getFile());
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot read key directory " + dir + ": "
                    + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage()));
        } catch (IllegalStateException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage());
        }
    }
}
