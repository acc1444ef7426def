package dev.previewtunnel.ingress.cli;

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

import java.util.Set;

/**
 * Command-line front end of the desktop side ({@code java -jar desktop-ingress.jar ...}).
 *
 * <pre>
 * desktop-ingress [--help] [--version]
 *   run --gateway ws://HOST:PORT/PATH (--token-file FILE | --token TOKEN) [--grant-file FILE | --grant GRANT]...
 *       [--listen 127.0.0.1:0] [--pool 2] [--gateway-ca PEM] [--state-dir DIR] [--session-id ID]
 *       [--control-listen 127.0.0.1:0 | --no-control] [--metrics-listen 127.0.0.1:PORT] [--drain-timeout 2s]
 *       [--grant-refresh-command PROGRAM [--grant-refresh-arg ARG]... | --grant-refresh-url URL] [--config FILE]
 *   session create [--id ID] [--egress deny|direct] | session list | session close --id ID | session rotate --id ID
 *   grant add --session ID (--grant G | --grant-file F) [--name LABEL] | grant remove --session ID --id GRANT_ID
 *   status [--json]
 *   doctor [--gateway URL] [--token-file F] [--grant-file F]... [--state-dir DIR] [--config FILE] [--json]
 *   help [COMMAND...]
 * </pre>
 *
 * Objects are named by options ({@code session close --id ID}); only a command's subject by nature is an argument
 * ({@code open ssh://HOST}). Every command's help ends with examples that parse (ExamplesTest).
 *
 * Error handling and exit codes ({@link ExitCodes}, shared with env-gateway through cli-support) are installed
 * by a picocli model transformer, so {@code new CommandLine(new IngressMain())} behaves exactly like the jar's
 * entry point. Values of {@code --token} and {@code --grant}, and anything shaped like a JWT, never appear in an
 * error line.
 */
@Command(name = "desktop-ingress",
        mixinStandardHelpOptions = true,
        versionProvider = IngressVersionProvider.class,
        modelTransformer = IngressMain.InstallErrorHandling.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  desktop-ingress open ssh://dev.example.com --port 5173",
                "  desktop-ingress help session close"},
        synopsisSubcommandLabel = "COMMAND",
        description = {
                "Desktop side of the preview tunnel: an authenticating HTTP proxy on this machine's loopback "
                        + "interface that carries a browser session's requests to loopback targets (a dev "
                        + "server, an API) in a remote environment, through a tunnel to that environment's "
                        + "env-gateway.",
                "Start here: 'desktop-ingress open ssh://HOST --port 5173' does everything for a dev server on an "
                        + "SSH host (the gateway there, the grants, a browser that needs no password); 'run' and "
                        + "the other commands are the parts it uses, for other setups (docs/running.md).",
                "Only a browser configured with the session's own proxy credential (written to an owner-only "
                        + "file) can use it, and only for the targets its grants name. Connection tokens and "
                        + "grants never travel in a URL; prefer --token-file and --grant-file, since command-line "
                        + "arguments are visible to other local users in ps.",
                "'open' and 'run' each print one JSON line on stdout (the open or ready event); 'session', "
                        + "'grant' and 'status --json' print JSON lines, 'status' a table and 'doctor' one line per check. Logs are JSON lines "
                        + "on stderr."},
        subcommands = {OpenCommand.class, PortsCommand.class, RunCommand.class, SessionCommand.class,
                GrantCommand.class, StatusCommand.class, DoctorCommand.class, CompletionCommand.class,
                HelpSubcommand.class})
public final class IngressMain {
    /** Usage footer shared by every command (picocli format string: %n is a line break). */
    static final String FOOTER = ExitCodes.FOOTER_START
            + "  3  refused: cannot read or write a file or directory it needs (token or%n"
            + "     grant file, state directory, credentials file), permission denied,%n"
            + "     a state directory or control.json another user owns or may change,%n"
            + "     a state directory another run (or open of the host) is using,%n"
            + "     the control API refused its token, or a doctor check found such a problem%n"
            + ExitCodes.FOOTER_INTERNAL
            + ExitCodes.FOOTER_ERRORS + "desktop-ingress: <reason>";
    /** Heading of every command's footer: the exit codes, then "Examples:"; the footer lines are the examples. */
    static final String EXIT_CODES_THEN_EXAMPLES = FOOTER + "%n%nExamples:%n";

    /** Options whose values are secrets: redacted from error lines. */
    static final Set<String> SECRET_OPTIONS = Set.of("--token", "--grant");

    /** True when running as the process entry point (not in-process, as in tests). */
    static volatile boolean standalone;

    public static void main(String[] args) {
        NettyDefaults.apply(); // before any Netty class initialises: Netty reads its properties once
        FatalErrors.install(); // out of memory or a dead event loop ends the process (docs/security.md)
        standalone = true;
        int code = new CommandLine(new IngressMain()).execute(args);
        System.exit(code);
    }

    /** Installs the one-line, secret-redacting error reporting and the exit-code mapping. */
    public static final class InstallErrorHandling implements IModelTransformer {
        @Override
        public CommandSpec transform(CommandSpec spec) {
            CompletionCommand.describe(spec, EXIT_CODES_THEN_EXAMPLES);
            HelpSubcommand.describe(spec, EXIT_CODES_THEN_EXAMPLES, "  desktop-ingress help session close",
                    "  desktop-ingress help grant add");
            return new ErrorHandling("desktop-ingress", SECRET_OPTIONS).installOn(spec);
        }
    }
}
