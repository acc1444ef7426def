package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.local.NettyDefaults;
import dev.previewtunnel.cli.CompletionCommand;
import dev.previewtunnel.cli.ErrorHandling;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.HelpSubcommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IModelTransformer;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Command-line front end of the environment gateway ({@code java -jar env-gateway.jar ...}).
 *
 * <pre>
 * env-gateway [--help] [--version]
 *   keys init   --dir DIR
 *   keys rotate --dir DIR
 *   grant issue --keys DIR --env ENV --session SESSION --target HOST:PORT [--ttl 10m] [--protocol tcp|http]
 *               [--provider P] [--thread T]
 *   token issue --keys DIR --env ENV [--ttl 12h]
 *   serve       --keys DIR --env ENV --listen HOST:PORT [--path /tunnel] [--tls-cert PEM --tls-key PEM]
 *               [--dial-timeout 5s] [--drain-timeout 10s] [--max-grant-lifetime 15m] [--allow-target CIDR]...
 *               [--admin-listen 127.0.0.1:PORT] [--state-dir DIR] [--metrics-listen 127.0.0.1:PORT] [--config FILE]
 *               [--stdio-control] [--init-keys]
 *   revoke      (--grant JTI | --session ID) [--state-dir DIR | --admin URL --admin-token-file FILE]
 *   doctor      [--keys DIR] [--env ENV] [--listen HOST:PORT] [--target HOST:PORT]... [--token-file F]
 *               [--grant-file F] [--config FILE] [--json]
 *   ports       [--json]
 *   help        [COMMAND...]
 * </pre>
 *
 * Objects are named by options ({@code revoke --grant JTI}); every command's help ends with examples that parse
 * (ExamplesTest).
 *
 * Error handling and exit codes ({@link ExitCodes}, shared with desktop-ingress through cli-support) are installed by a picocli model transformer, so
 * {@code new CommandLine(new GatewayMain())} behaves exactly like the jar's entry point.
 */
@Command(name = "env-gateway",
        mixinStandardHelpOptions = true,
        versionProvider = GatewayVersionProvider.class,
        modelTransformer = GatewayMain.InstallErrorHandling.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  env-gateway keys init --dir ~/.ptun-keys",
                "  env-gateway serve --keys ~/.ptun-keys --env dev1 --listen 127.0.0.1:7443",
                "  env-gateway help grant issue"},
        synopsisSubcommandLabel = "COMMAND",
        description = {
                "Environment side of the preview tunnel: manages the keys that sign grants and connection tokens, "
                        + "issues them, and serves the tunnel endpoint that dials loopback targets for authorised "
                        + "desktops.",
                "Connection tokens authenticate a tunnel connection and travel in the Authorization header of the "
                        + "WebSocket upgrade, never in a URL. Grants authorise streams to one target, travel in "
                        + "the ptun-grant header of each stream, and should live minutes.",
                "Only one line is ever printed on stdout (a JSON event, the grant/token of 'issue', the answer of "
                        + "'revoke'), except for 'doctor', which prints one line per check, and 'serve "
                        + "--stdio-control', which answers its parent's requests there; logs are JSON lines on "
                        + "stderr."},
        subcommands = {KeysCommand.class, GrantCommand.class, TokenCommand.class, ServeCommand.class,
                RevokeCommand.class, DoctorCommand.class, PortsCommand.class, CompletionCommand.class,
                HelpSubcommand.class})
public final class GatewayMain {
    /** Usage footer shared by every command (picocli format string: %n is a line break). */
    static final String FOOTER = ExitCodes.FOOTER_START
            + "  3  refused: key directory problem (keys missing or already present,%n"
            + "     key file readable by group/others, invalid key file, permission denied),%n"
            + "     a state directory or state file another user owns or may change, a state%n"
            + "     directory another serve --admin-listen is using, an -o file others may%n"
            + "     read, a corrupt revocations.json, a full revocation list%n"
            + "     (--max-revocations), the admin endpoint refused its token, or a doctor%n"
            + "     check found such a problem%n"
            + ExitCodes.FOOTER_INTERNAL
            + ExitCodes.FOOTER_ERRORS + "env-gateway: <reason>";
    /** Heading of every command's footer: the exit codes, then "Examples:"; the footer lines are the examples. */
    static final String EXIT_CODES_THEN_EXAMPLES = FOOTER + "%n%nExamples:%n";

    /** True when running as the process entry point (not in-process, as in tests). */
    static volatile boolean standalone;

    public static void main(String[] args) {
        NettyDefaults.apply(); // before any Netty class initialises: Netty reads its properties once
        FatalErrors.install(); // out of memory or a dead event loop ends the process (docs/security.md)
        standalone = true;
        int code = new CommandLine(new GatewayMain()).execute(args);
        System.exit(code);
    }

    /**
     * Installs the one-line error reporting and the exit-code mapping on the command line being built (picocli
     * runs model transformers once the top-level {@link CommandLine} and its subcommands exist; the handlers
     * propagate to the subcommands).
     */
    public static final class InstallErrorHandling implements IModelTransformer {
        @Override
        public CommandSpec transform(CommandSpec spec) {
            CompletionCommand.describe(spec, EXIT_CODES_THEN_EXAMPLES);
            HelpSubcommand.describe(spec, EXIT_CODES_THEN_EXAMPLES, "  env-gateway help grant issue",
                    "  env-gateway help keys");
            return new ErrorHandling("env-gateway").installOn(spec);
        }
    }
}
