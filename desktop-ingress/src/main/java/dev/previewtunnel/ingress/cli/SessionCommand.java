package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.cli.OptionValuesMayStartWithDash;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.json.JsonTrees;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code session create|list|close|rotate}: browser sessions of a running ingress, through its control API. */
@Command(name = "session",
        mixinStandardHelpOptions = true,
        versionProvider = IngressVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  desktop-ingress session create --id web",
                "  desktop-ingress session close --id web"},
        synopsisSubcommandLabel = "(create | list | close | rotate)",
        description = {
                "Create, list and close the browser sessions of a running ingress ('desktop-ingress run').",
                "A browser session is one browser profile, Playwright context or Electron partition: its own proxy "
                        + "credential (in an owner-only file), its own grants, its own policy for hosts it has no "
                        + "grant for. The commands find the ingress through STATE_DIR/control.json; exit 2 when "
                        + "no ingress runs there.",
                "A session lives until 'session close', across ingress restarts: its credential stays the same "
                        + "until 'session rotate', and its grants come back with it."},
        subcommands = {SessionCommand.Create.class, SessionCommand.ListSessions.class, SessionCommand.Close.class,
                SessionCommand.Rotate.class})
final class SessionCommand {

    @Command(name = "create",
            mixinStandardHelpOptions = true,
            versionProvider = IngressVersionProvider.class,
            exitCodeOnInvalidInput = ExitCodes.USAGE,
            exitCodeOnExecutionException = ExitCodes.INTERNAL,
            footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
            footer = {"  desktop-ingress session create --id web",
                    "  desktop-ingress session create --id crawler --egress direct"},
            description = {
                    "Create a browser session and print it as one JSON line: id, username, egress, grants and "
                            + "credentialsFile, the owner-only file with the proxy username and password (the "
                            + "password is never printed).",
                    "Then attach grants with 'grant add --session ID' and point a browser profile at the proxy "
                            + "with that credential."})
    static final class Create implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ControlClient.Options control;

        @Option(names = "--id", paramLabel = "ID",
                description = "Session id: 1 to 64 letters, digits, '.', '_' or '-'; the proxy user is ptun-ID "
                        + "(default: a generated id).")
        String id;

        @Option(names = "--egress", paramLabel = "POLICY",
                description = "Hosts the session has no grant for: deny (a 403 page) or direct (reached from this "
                        + "desktop, public addresses only) (default: deny).")
        String egress;

        @Override
        public Integer call() {
            ObjectNode body = Cli.json();
            if (id != null) {
                IngressCli.sessionId(spec, "--id", id);
                body.put("id", id);
            }
            if (egress != null) {
                String e = egress.toLowerCase(Locale.ROOT);
                if (!e.equals("deny") && !e.equals("direct")) {
                    throw Cli.usage(spec, "--egress must be deny or direct, got '" + Cli.shown(egress) + "'");
                }
                body.put("egress", e);
            }
            JsonNode answer = control.client(spec).post("/v1/sessions", body);
            Cli.printLine(JsonTrees.write(answer));
            return ExitCodes.OK;
        }
    }

    @Command(name = "list",
            mixinStandardHelpOptions = true,
            versionProvider = IngressVersionProvider.class,
            exitCodeOnInvalidInput = ExitCodes.USAGE,
            exitCodeOnExecutionException = ExitCodes.INTERNAL,
            footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
            footer = {"  desktop-ingress session list",
                    "  desktop-ingress session list --state-dir /tmp/ptun-state"},
            description = "Print every session as one JSON line: {\"sessions\":[{id, username, egress, "
                    + "liveConnections, liveStreams, grants}...]} (never a password or a grant).")
    static final class ListSessions implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ControlClient.Options control;

        @Override
        public Integer call() {
            Cli.printLine(JsonTrees.write(control.client(spec).get("/v1/sessions")));
            return ExitCodes.OK;
        }
    }

    @Command(name = "close",
            modelTransformer = OptionValuesMayStartWithDash.class,
            mixinStandardHelpOptions = true,
            versionProvider = IngressVersionProvider.class,
            exitCodeOnInvalidInput = ExitCodes.USAGE,
            exitCodeOnExecutionException = ExitCodes.INTERNAL,
            footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
            footer = {"  desktop-ingress session close --id web"},
            description = "Close a session: its live connections end at once, its credential stops working and its "
                    + "credentials file is deleted. Prints {\"closed\":ID,\"closedConnections\":N}.")
    static final class Close implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ControlClient.Options control;

        @Option(names = "--id", paramLabel = "ID", description = "The session to close (required).")
        String id;

        @Mixin
        MovedToOptions moved;

        @Override
        public Integer call() {
            moved.require(spec, id, "--id", "desktop-ingress session close --id %s");
            IngressCli.sessionId(spec, "--id", id);
            Cli.printLine(JsonTrees.write(control.client(spec).delete("/v1/sessions/" + id)));
            return ExitCodes.OK;
        }
    }

    @Command(name = "rotate",
            modelTransformer = OptionValuesMayStartWithDash.class,
            mixinStandardHelpOptions = true,
            versionProvider = IngressVersionProvider.class,
            exitCodeOnInvalidInput = ExitCodes.USAGE,
            exitCodeOnExecutionException = ExitCodes.INTERNAL,
            footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
            footer = {"  desktop-ingress session rotate --id web"},
            description = "Give a session a new proxy password (a credential is otherwise stable for the life of "
                    + "the session, across ingress restarts): its credentials file is rewritten, the old password "
                    + "stops working and the connections opened with it end at once. Prints "
                    + "{\"rotated\":ID,\"closedConnections\":N,\"credentialsFile\":PATH} (never the password).")
    static final class Rotate implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ControlClient.Options control;

        @Option(names = "--id", paramLabel = "ID",
                description = "The session whose credential to replace (required).")
        String id;

        @Mixin
        MovedToOptions moved;

        @Override
        public Integer call() {
            moved.require(spec, id, "--id", "desktop-ingress session rotate --id %s");
            IngressCli.sessionId(spec, "--id", id);
            Cli.printLine(JsonTrees.write(control.client(spec).post("/v1/sessions/" + id + "/rotate", Cli.json())));
            return ExitCodes.OK;
        }
    }
}
