package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.OptionValuesMayStartWithDash;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.local.http.LocalApi;
import dev.previewtunnel.gateway.admin.AdminClient;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code revoke}: asks a running gateway's admin endpoint to revoke a grant or a whole browser session. */
@Command(name = "revoke",
        modelTransformer = OptionValuesMayStartWithDash.class,
        mixinStandardHelpOptions = true,
        versionProvider = GatewayVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  env-gateway revoke --session web",
                "  env-gateway revoke --grant 3fQk2_Zr9mXb1yWcA4uT0g --state-dir /var/lib/ptun-gw"},
        sortOptions = false,
        description = {
                "Revoke a grant (by its id, the jti) or every grant of a browser session on a running gateway: "
                        + "refused from now on, and the live streams opened with it (an HMR WebSocket included) "
                        + "are reset at once.",
                "Talks to the admin endpoint of 'serve --admin-listen': found through STATE_DIR/"
                        + GatewayCli.ADMIN_STATE_FILE + " (the same --state-dir, PTUN_GATEWAY_STATE_DIR or "
                        + "config file as serve), or given with --admin and --admin-token-file.",
                "Prints the endpoint's JSON answer on stdout, e.g. "
                        + "{\"revoked\":\"grant\",\"id\":\"...\",\"closedStreams\":1}. Exit 2 when no admin "
                        + "endpoint answers, 3 when it refuses the token or the list is full (--max-revocations), "
                        + "or when the state directory, admin.json or the token file is another user's or open "
                        + "to group/others."})
final class RevokeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    static final class What {
        @Option(names = "--grant", paramLabel = "JTI", required = true,
                description = "Id (jti) of the grant to revoke, as in the gateway's audit lines.")
        String grant;

        @Option(names = "--session", paramLabel = "SESSION", required = true,
                description = "Browser session whose grants (all issued until now) to revoke.")
        String session;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    What what;

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "State directory of the running 'serve' (default: $XDG_STATE_HOME/preview-tunnel-gateway, "
                    + "else ~/.local/state/preview-tunnel-gateway).")
    Path stateDir;

    @Option(names = "--config", paramLabel = "FILE",
            description = "The gateway's JSON config file, for its state-dir (default: $PTUN_GATEWAY_CONFIG).")
    Path config;

    @Option(names = "--admin", paramLabel = "URL",
            description = "The admin endpoint's URL (the admin field of serve's ready line), e.g. "
                    + "http://127.0.0.1:7444; needs --admin-token-file. Must be loopback.")
    String admin;

    @Option(names = "--admin-token-file", paramLabel = "FILE",
            description = "File holding the admin token (the adminTokenFile field of serve's ready line).")
    Path adminTokenFile;

    @Override
    public Integer call() {
        String id = what.grant != null ? what.grant : what.session;
        Cli.requireNonBlank(spec, id, what.grant != null ? "--grant" : "--session");
        URI url;
        Path tokenFile;
        if (admin != null || adminTokenFile != null) {
            if (admin == null || adminTokenFile == null) {
                throw Cli.usage(spec, "--admin and --admin-token-file must be given together");
            }
            url = adminUrl(admin);
            tokenFile = adminTokenFile;
        } else {
            Settings s = Settings.load(spec, config, GatewayCli.ENV_PREFIX, ServeCommand.CONFIG_KEYS);
            Path dir = s.path("state-dir", stateDir, GatewayCli.defaultStateDir());
            AdminClient.Announcement announced = AdminClient.announced(dir, GatewayCli.ADMIN_STATE_FILE,
                    dir.resolve(GatewayCli.ADMIN_TOKEN_FILE));
            url = adminUrl(announced.url());
            tokenFile = announced.tokenFile();
        }
        Cli.requireReadableFile(spec, tokenFile, "--admin-token-file");
        AdminClient.Answer answer = new AdminClient(url, AdminClient.readToken(tokenFile))
                .revoke(what.grant != null ? "grant" : "session", id);
        int status = answer.status();
        if (status == 200) {
            Cli.printLine(answer.body());
            return ExitCodes.OK;
        }
        String reason = answer.reason();
        if (status == 401 || status == 403) {
            throw new CliException(ExitCodes.REFUSED, "the admin endpoint at " + url + " refused the request ("
                    + reason + "); is " + tokenFile + " the token file of the gateway listening there?");
        }
        if (status == 507) {
            throw new CliException(ExitCodes.REFUSED, "the gateway refused the revocation (" + reason + ")");
        }
        if (status == 400) {
            throw Cli.usage(spec, "the admin endpoint refused the request as malformed (" + reason + ")");
        }
        throw new CliException(ExitCodes.INTERNAL, "the admin endpoint answered HTTP " + status + " (" + reason + ")");
    }

    private URI adminUrl(String text) {
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw Cli.usage(spec, "--admin must be a URL like http://127.0.0.1:7444, got '" + Cli.shown(text) + "'");
        }
        if (!"http".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 0
                || !LocalApi.loopbackHost(uri.getHost()) || uri.getRawUserInfo() != null || uri.getRawQuery() != null) {
            throw Cli.usage(spec, "the admin URL must be http://LOOPBACK:PORT (e.g. http://127.0.0.1:7444): the "
                    + "admin token is never sent anywhere else; got '" + Cli.shown(text) + "'");
        }
        return uri;
    }
}
