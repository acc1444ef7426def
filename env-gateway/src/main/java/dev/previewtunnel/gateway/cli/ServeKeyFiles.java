package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.OwnerOnlyCheck;
import dev.previewtunnel.cli.TrustedPaths;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.ReloadingVerificationKeys;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;

/** The key material {@code serve} reads at start: the verification keys and the TLS certificate and key. */
final class ServeKeyFiles {
    private static final Logger log = LoggerFactory.getLogger(ServeKeyFiles.class);

    private ServeKeyFiles() {
    }

    /**
     * The verification keys of {@code keysPath} (the key directory or its verify-keys file), re-read after a
     * rotation. The gateway only verifies: it reads the public JWK Set and never needs the signing key, so the
     * environment's private key can stay where grants are issued. Missing, untrusted or unreadable: exit 3.
     */
    static ReloadingVerificationKeys verificationKeys(Path keysPath) {
        Path verifyFile = Files.isDirectory(keysPath) ? keysPath.resolve(KeyDirectory.VERIFY_KEYS_FILE) : keysPath;
        if (!Files.exists(verifyFile)) {
            throw new CliException(ExitCodes.REFUSED, "no verify keys at " + verifyFile
                    + "; create keys with: env-gateway keys init --dir DIR");
        }
        requireUnwritableByOthers(verifyFile);
        try {
            return new ReloadingVerificationKeys(verifyFile, Clock.systemUTC());
        } catch (IOException | IllegalStateException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot load verify keys from " + verifyFile + ": "
                    + e.getMessage());
        }
    }

    /**
     * The verification keys decide which grants are genuine, and are re-read every second: a file or directory
     * another user could write would let them add a key of their own (exit 3). Reading it is fine: they are public.
     */
    private static void requireUnwritableByOthers(Path verifyFile) {
        try {
            Path dir = verifyFile.toAbsolutePath().getParent();
            TrustedPaths.requireUnwritableByOthers(dir, "key directory");
            TrustedPaths.requireUnwritableByOthers(verifyFile, "verify keys file");
        } catch (TrustedPaths.UntrustedException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage());
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot check " + verifyFile + " ("
                    + e.getClass().getSimpleName() + ")");
        }
    }

    /** The server TLS context of --tls-cert and --tls-key: a file missing is exit 1, unreadable exit 3. */
    static SslContext serverTls(CommandSpec spec, Path tlsCert, Path tlsKey) {
        Cli.requireReadableFile(spec, tlsCert, "--tls-cert");
        Cli.requireReadableFile(spec, tlsKey, "--tls-key");
        warnIfShared(tlsKey);
        try {
            return SslContextBuilder.forServer(tlsCert.toFile(), tlsKey.toFile()).build();
        } catch (javax.net.ssl.SSLException | IllegalArgumentException e) {
            // Netty's messages name the file and the problem, never the key's content.
            throw new CliException(ExitCodes.USAGE, "cannot load TLS certificate " + tlsCert + " / key " + tlsKey
                    + ": " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
    }

    private static void warnIfShared(Path keyFile) {
        if (OwnerOnlyCheck.sharedPermissions(keyFile) != null) {
            log.warn("TLS private key {} is accessible beyond its owner; consider chmod 600 {}", keyFile, keyFile);
        }
    }
}
