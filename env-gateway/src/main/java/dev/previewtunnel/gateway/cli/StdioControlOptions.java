package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.gateway.control.ControlDispatcher;
import dev.previewtunnel.gateway.control.ControlIssuer;
import dev.previewtunnel.gateway.control.StdioControlChannel;
import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.gateway.ports.LoopbackListeners;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.local.audit.AuditLog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;

/**
 * {@code serve}'s options for running as the child of a parent process over one ssh channel ({@code desktop-ingress
 * open}): keys created on first use, and tokens and grants minted over stdin/stdout, so that no secret is ever on a
 * command line and no JVM starts per grant (docs/operations.md, "The stdio control channel").
 */
final class StdioControlOptions {
    /** The option that is no setting: a config file or variable must not make a service stop at stdin's end. */
    static final String NOT_A_SETTING = "stdio-control";
    private static final Logger log = LoggerFactory.getLogger(StdioControlOptions.class);

    @Option(names = "--stdio-control",
            description = "For a parent process only (desktop-ingress open runs serve this way over ssh): after "
                    + "the ready line, read requests on stdin and answer on stdout, one JSON object per line "
                    + "(mint a connection token or a grant, list ports, ping), and stop as on SIGTERM, exit 0, "
                    + "when stdin closes. Needs --keys DIR with the signing key (default: off; a flag only, "
                    + "not a setting).")
    boolean stdioControl;

    @Option(names = "--init-keys",
            description = "When --keys DIR holds no keys, create them first as 'keys init --dir DIR' does "
                    + "(rwx------ directory, owner-only files); when it holds both files, use them; one without "
                    + "the other is refused (exit 3) (default: off).")
    boolean initKeys;

    /** {@code --init-keys}: creates the keys of {@code keysPath} when neither file is there. Exit 3 if half there. */
    void prepareKeys(Path keysPath) {
        if (!initKeys) {
            return;
        }
        if (Files.exists(keysPath) && !Files.isDirectory(keysPath)) {
            throw new CliException(ExitCodes.REFUSED, "--init-keys needs --keys to be a directory; " + keysPath
                    + " is a file");
        }
        Path signing = keysPath.resolve(KeyDirectory.SIGNING_KEY_FILE);
        Path verify = keysPath.resolve(KeyDirectory.VERIFY_KEYS_FILE);
        boolean hasSigning = Files.exists(signing);
        boolean hasVerify = Files.exists(verify);
        if (hasSigning && hasVerify) {
            return;
        }
        if (hasSigning || hasVerify) {
            throw new CliException(ExitCodes.REFUSED, "key directory " + keysPath + " holds "
                    + (hasSigning ? signing.getFileName() + " but not " + verify.getFileName()
                    : verify.getFileName() + " but not " + signing.getFileName())
                    + "; restore the missing file, or move the directory away to create new keys");
        }
        KeyDirectory created = GatewayCli.initKeys(keysPath);
        KeysCommand.warnIfShared(keysPath);
        log.atInfo().setMessage("created keys in {} (--init-keys)").addArgument(keysPath)
                .addKeyValue("event", "keys_created").addKeyValue("kid", created.signingKey().kid()).log();
    }

    /**
     * The control channel of {@code --stdio-control}, not started yet, or null without it. Fails the start (exit 3)
     * when the signing key cannot be read: better now than at the first grant.
     */
    StdioControlChannel channel(CommandSpec spec, Path keysPath, String env, Duration maxGrantLifetime,
                                TargetPolicy policy, Runnable onParentGone) {
        if (!stdioControl) {
            return null;
        }
        if (!Files.isDirectory(keysPath)) {
            throw Cli.usage(spec, "--stdio-control mints grants: --keys must be the key directory with the "
                    + "signing key, not " + keysPath);
        }
        GatewayCli.openKeys(keysPath);
        ControlIssuer issuer = new ControlIssuer(env, () -> GatewayCli.openKeys(keysPath).signingKey(),
                maxGrantLifetime, policy, new AuditLog("gateway"), Clock.systemUTC());
        ControlDispatcher dispatcher = new ControlDispatcher(issuer,
                () -> LoopbackListeners.of(LoopbackListeners.currentUid()));
        return new StdioControlChannel(System.in, stdout(), dispatcher, onParentGone);
    }

    /**
     * Run as the main program, the channel owns file descriptor 1 and {@link System#out} becomes stderr once the
     * ready line is out ({@link #start}): nothing else may ever write between two responses.
     */
    private static OutputStream stdout() {
        return GatewayMain.standalone ? new FileOutputStream(FileDescriptor.out) : System.out;
    }

    /** Starts {@code channel} (if any); call right after the ready line. */
    static void start(StdioControlChannel channel) {
        if (channel == null) {
            return;
        }
        if (GatewayMain.standalone) {
            System.out.flush();
            System.setOut(System.err);
        }
        channel.start();
    }
}
