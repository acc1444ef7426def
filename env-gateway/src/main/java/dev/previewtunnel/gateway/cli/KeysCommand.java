package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.OwnerOnlyCheck;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.grants.KeyDirectory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code keys init} and {@code keys rotate}: the Ed25519 key pair grants and tokens are signed with. */
@Command(name = "keys",
        mixinStandardHelpOptions = true,
        versionProvider = GatewayVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  env-gateway keys init --dir ~/.ptun-keys",
                "  env-gateway keys rotate --dir ~/.ptun-keys"},
        synopsisSubcommandLabel = "(init | rotate)",
        description = {
                "Create or rotate the Ed25519 key pair that signs grants and connection tokens.",
                "A key directory holds signing-key.jwk.json (the private key, rw-------) and "
                        + "verify-keys.jwks.json (every public key still trusted). Keep it private: anyone "
                        + "who can read the signing key can mint grants."},
        subcommands = {KeysCommand.Init.class, KeysCommand.Rotate.class})
final class KeysCommand {
    private static final Logger log = LoggerFactory.getLogger(KeysCommand.class);

    @Command(name = "init",
            mixinStandardHelpOptions = true,
            versionProvider = GatewayVersionProvider.class,
            exitCodeOnInvalidInput = ExitCodes.USAGE,
            exitCodeOnExecutionException = ExitCodes.INTERNAL,
            footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
            footer = {"  env-gateway keys init --dir ~/.ptun-keys"},
            description = {
                    "Create a key directory with a new signing key.",
                    "Creates DIR (rwx------) if missing, writes signing-key.jwk.json and verify-keys.jwks.json "
                            + "owner-only (rw-------) and atomically, and prints one JSON line on stdout: "
                            + "{\"event\":\"keys_created\",\"dir\":ABSOLUTE_DIR,\"kid\":KEY_ID}.",
                    "Refuses (exit 3) if DIR already holds keys: use 'keys rotate' to replace the signing key."})
    static final class Init implements Callable<Integer> {
        @Option(names = "--dir", required = true, paramLabel = "DIR",
                description = "Key directory to create (required).")
        Path dir;

        @Override
        public Integer call() {
            KeyDirectory keys = GatewayCli.initKeys(dir);
            warnIfShared(dir);
            ObjectNode out = Cli.json()
                    .put("event", "keys_created")
                    .put("dir", dir.toAbsolutePath().normalize().toString())
                    .put("kid", keys.signingKey().kid());
            Cli.printJson(out);
            return ExitCodes.OK;
        }
    }

    @Command(name = "rotate",
            mixinStandardHelpOptions = true,
            versionProvider = GatewayVersionProvider.class,
            exitCodeOnInvalidInput = ExitCodes.USAGE,
            exitCodeOnExecutionException = ExitCodes.INTERNAL,
            footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
            footer = {"  env-gateway keys rotate --dir ~/.ptun-keys"},
            description = {
                    "Replace the signing key with a new one.",
                    "Adds the new public key to verify-keys.jwks.json and keeps the old ones, so grants and "
                            + "tokens already issued keep verifying until they expire (delete an entry by hand to "
                            + "stop trusting it). A running gateway picks up the new verify keys without a restart. "
                            + "Prints one JSON line on stdout: {\"event\":\"keys_rotated\",\"kid\":NEW_KEY_ID}.",
                    "Refuses (exit 3) if DIR holds no keys yet (run 'keys init' first) or they are invalid."})
    static final class Rotate implements Callable<Integer> {
        @Option(names = "--dir", required = true, paramLabel = "DIR",
                description = "Existing key directory (required).")
        Path dir;

        @Override
        public Integer call() {
            if (!Files.exists(dir.resolve(KeyDirectory.VERIFY_KEYS_FILE))) {
                throw new CliException(ExitCodes.REFUSED, "no keys in " + dir + " to rotate; create them with: "
                        + "env-gateway keys init --dir " + dir);
            }
            KeyDirectory keys;
            try {
                keys = KeyDirectory.rotate(dir);
            } catch (IllegalStateException e) {
                throw new CliException(ExitCodes.REFUSED, e.getMessage());
            } catch (NoSuchFileException e) {
                throw new CliException(ExitCodes.REFUSED, "no keys in " + dir + " (" + e.getFile()
                        + " does not exist); create them with: env-gateway keys init --dir " + dir);
            } catch (AccessDeniedException e) {
                throw new CliException(ExitCodes.REFUSED, "permission denied rotating keys in " + dir
                        + " (" + e.getFile() + ")");
            } catch (IOException e) {
                throw new CliException(ExitCodes.REFUSED, "cannot rotate keys in " + dir + ": "
                        + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage()));
            }
            warnIfShared(dir);
            Cli.printJson(Cli.json().put("event", "keys_rotated").put("kid", keys.signingKey().kid()));
            return ExitCodes.OK;
        }
    }

    /** An existing directory keeps its permissions; say so when others can list or enter it. */
    static void warnIfShared(Path dir) {
        // Only a warning: the key files themselves are owner-only either way.
        String shared = OwnerOnlyCheck.sharedPermissions(dir);
        if (shared != null) {
            log.warn("key directory {} is accessible by group/others ({}); consider chmod 700 {}", dir, shared, dir);
        }
    }
}
