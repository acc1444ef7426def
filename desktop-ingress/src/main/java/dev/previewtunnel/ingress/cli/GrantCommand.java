package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.cli.OptionValuesMayStartWithDash;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.SecretFiles;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.json.JsonTrees;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code grant add|remove}: attach grants to, or detach them from, a session of a running ingress. */
@Command(name = "grant",
        mixinStandardHelpOptions = true,
        versionProvider = IngressVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  desktop-ingress grant add --session web --grant-file ~/ptun-grant",
                "  desktop-ingress grant remove --session web --id 3fQk2_Zr9mXb1yWcA4uT0g"},
        synopsisSubcommandLabel = "(add | remove)",
        description = {
                "Attach grants to a browser session of a running ingress, or detach them.",
                "A grant ('env-gateway grant issue') lets the session reach one target in one environment; it is "
                        + "checked by the gateway on every stream. Prefer --grant-file: a value given with --grant "
                        + "is visible to other local users in ps."},
        subcommands = {GrantCommand.Add.class, GrantCommand.Remove.class})
final class GrantCommand {
    private static final String GRANT_ID = "[A-Za-z0-9._~-]{1,128}";

    static final class Source {
        @Option(names = "--grant", paramLabel = "GRANT", required = true,
                description = "The grant itself (visible in ps: prefer --grant-file).")
        String grant;

        @Option(names = "--grant-file", paramLabel = "FILE", required = true,
                description = "File of grants, one per line (# comments and blank lines ignored); each is attached.")
        Path grantFile;
    }

    @Command(name = "add",
            mixinStandardHelpOptions = true,
            versionProvider = IngressVersionProvider.class,
            exitCodeOnInvalidInput = ExitCodes.USAGE,
            exitCodeOnExecutionException = ExitCodes.INTERNAL,
            footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
            footer = {"  desktop-ingress grant add --session web --grant-file ~/ptun-grant",
                    "  desktop-ingress grant add --session web --grant-file ~/api-grant --name api"},
            description = {
                    "Attach grants to a session; prints one JSON line per grant: grantId, environment, target, "
                            + "virtualHost, expiresAt and authorities, the host:port names the browser can use for "
                            + "it (localhost:P, 127.0.0.1:P, [::1]:P when the session's port P is not taken by "
                            + "another environment, and NAME.ENV.SUFFIX:P always; SUFFIX is the ingress's "
                            + "--virtual-host-suffix, preview.localhost by default).",
                    "A virtual host names one target: a grant whose virtual host another target already holds "
                            + "in the session is refused (exit 1, virtual_host_taken); give it another --name.",
                    "The grant is only read here (to learn its target), never trusted: the gateway verifies it on "
                            + "every stream."})
    static final class Add implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ControlClient.Options control;

        @Option(names = "--session", paramLabel = "ID", required = true, description = "The session (required).")
        String session;

        @ArgGroup(exclusive = true, multiplicity = "1")
        Source source;

        @Option(names = "--name", paramLabel = "LABEL",
                description = "Label of the grant's virtual host, LABEL.ENV.SUFFIX:P (default: pPORT for a "
                        + "localhost target, HOST-pPORT for any other host). Only with a single grant.")
        String name;

        @Override
        public Integer call() {
            IngressCli.sessionId(spec, "--session", session);
            if (name != null && !name.matches("[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")) {
                throw Cli.usage(spec, "--name must be a DNS label: letters, digits and '-', got '"
                        + Cli.shown(name) + "'");
            }
            List<String> grants = new ArrayList<>();
            List<String> where = new ArrayList<>();
            if (source.grant != null) {
                grants.add(source.grant.strip());
                where.add("--grant");
            } else {
                List<String> lines = SecretFiles.readLines(spec, source.grantFile, "--grant-file");
                for (int i = 0; i < lines.size(); i++) {
                    grants.add(lines.get(i));
                    where.add("line " + (i + 1) + " of --grant-file " + source.grantFile);
                }
                if (grants.isEmpty()) {
                    throw Cli.usage(spec, "--grant-file " + source.grantFile + " holds no grant");
                }
            }
            if (name != null && grants.size() > 1) {
                throw Cli.usage(spec, "--name applies to a single grant; " + source.grantFile + " holds "
                        + grants.size());
            }
            for (int i = 0; i < grants.size(); i++) { // check them all before attaching any
                try {
                    UnverifiedGrantView.decode(grants.get(i));
                } catch (IllegalArgumentException e) {
                    throw Cli.usage(spec, where.get(i) + " is not a readable grant (expected a JWT from "
                            + "'env-gateway grant issue'); the value is not shown");
                }
            }
            ControlClient client = control.client(spec);
            for (String grant : grants) {
                ObjectNode body = Cli.json().put("grant", grant);
                if (name != null) {
                    body.put("name", name);
                }
                JsonNode answer = client.post("/v1/sessions/" + session + "/grants", body);
                Cli.printLine(JsonTrees.write(answer));
            }
            return ExitCodes.OK;
        }
    }

    @Command(name = "remove",
            modelTransformer = OptionValuesMayStartWithDash.class,
            mixinStandardHelpOptions = true,
            versionProvider = IngressVersionProvider.class,
            exitCodeOnInvalidInput = ExitCodes.USAGE,
            exitCodeOnExecutionException = ExitCodes.INTERNAL,
            footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
            footer = {"  desktop-ingress grant remove --session web --id 3fQk2_Zr9mXb1yWcA4uT0g"},
            description = "Detach a grant from a session; the session's live connections that used it end at once. "
                    + "Prints {\"detached\":GRANT_ID,\"closedConnections\":N}.")
    static final class Remove implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ControlClient.Options control;

        @Option(names = "--session", paramLabel = "ID", required = true, description = "The session (required).")
        String session;

        @Option(names = "--id", paramLabel = "GRANT_ID",
                description = "The grant's id (grantId in 'grant add' and 'session list') (required).")
        String grantId;

        @Mixin
        MovedToOptions moved;

        @Override
        public Integer call() {
            moved.require(spec, grantId, "--id", "desktop-ingress grant remove --session "
                    + Cli.shown(session).replace("%", "%%") + " --id %s");
            IngressCli.sessionId(spec, "--session", session);
            if (!grantId.matches(GRANT_ID)) {
                throw Cli.usage(spec, "--id must be a grant id as printed by 'grant add', got '"
                        + Cli.shown(grantId) + "'");
            }
            Cli.printLine(JsonTrees.write(
                    control.client(spec).delete("/v1/sessions/" + session + "/grants/" + grantId)));
            return ExitCodes.OK;
        }
    }
}
