package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.SecretOutputFile;
import dev.previewtunnel.grants.KeyDirectory;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/** Gateway-specific command helpers (the generic ones are in {@link dev.previewtunnel.cli.Cli}). */
final class GatewayCli {
    /** Environment variables of the gateway's settings start with this ({@code PTUN_GATEWAY_LISTEN}). */
    static final String ENV_PREFIX = "PTUN_GATEWAY_";
    /** In the state directory: where a running gateway's admin endpoint listens (no secret). */
    static final String ADMIN_STATE_FILE = "admin.json";
    /** In the state directory: the admin endpoint's bearer token (owner-only). */
    static final String ADMIN_TOKEN_FILE = "admin.token";

    private GatewayCli() {
    }

    /** {@code $XDG_STATE_HOME/preview-tunnel-gateway}, else {@code ~/.local/state/preview-tunnel-gateway}. */
    static Path defaultStateDir() {
        String xdg = System.getenv("XDG_STATE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg)
                : Path.of(System.getProperty("user.home"), ".local", "state");
        return base.resolve("preview-tunnel-gateway");
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

    /**
     * Creates a key directory with a new signing key ({@code keys init}); every problem (keys already there,
     * permission denied, a file in the way) is a refusal, exit code 3.
     */
    static KeyDirectory initKeys(Path dir) {
        try {
            return KeyDirectory.init(dir);
        } catch (IllegalStateException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage());
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied creating keys in " + dir
                    + " (" + e.getFile() + ")");
        } catch (FileAlreadyExistsException e) {
            throw new CliException(ExitCodes.REFUSED, e.getFile() + " exists and is not a directory");
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot create keys in " + dir + ": "
                    + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage()));
        }
    }

    /** The one output of {@code token issue} / {@code grant issue}: stdout, or the owner-only {@code -o} file. */
    static void emitSecret(Path output, String secret) {
        if (output == null) {
            Cli.printLine(secret);
        } else {
            SecretOutputFile.write(output, "--output", secret);
        }
    }
}
