package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.KeyDirectory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.Callable;

/** {@code token issue}: the connection token a desktop authenticates its tunnel connection with. */
@Command(name = "token",
        mixinStandardHelpOptions = true,
        versionProvider = GatewayVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  env-gateway token issue --keys ~/.ptun-keys --env dev1 -o ~/ptun-token"},
        synopsisSubcommandLabel = "issue",
        description = {
                "Issue connection tokens: they let a desktop open a tunnel connection to the gateway of one "
                        + "environment.",
                "Tokens travel in the Authorization: Bearer header of the WebSocket upgrade, never in a URL. A "
                        + "token alone opens no stream: every stream also needs its own grant."},
        subcommands = TokenCommand.Issue.class)
final class TokenCommand {

    @Command(name = "issue",
            mixinStandardHelpOptions = true,
            versionProvider = GatewayVersionProvider.class,
            exitCodeOnInvalidInput = ExitCodes.USAGE,
            exitCodeOnExecutionException = ExitCodes.INTERNAL,
            footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
            footer = {"  env-gateway token issue --keys ~/.ptun-keys --env dev1 -o ~/ptun-token",
                    "  env-gateway token issue --keys ~/.ptun-keys --env dev1 --ttl 1h"},
            description = {
                    "Sign a connection token for ENV and print it on stdout (exactly one line), or write it to "
                            + "-o FILE.",
                    "The desktop sends it as 'Authorization: Bearer <token>' on the WebSocket upgrade; never "
                            + "put it in a URL or query string (URLs end up in logs and browser history). Treat "
                            + "it as a secret until it expires."})
    static final class Issue implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--keys", required = true, paramLabel = "DIR",
                description = "Key directory holding the signing key (see 'keys init') (required).")
        Path keys;

        @Option(names = "--env", required = true, paramLabel = "ENV",
                description = "Environment the token is for; must match the gateway's --env (required).")
        String environment;

        @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "12h",
                converter = Converters.DurationConverter.class,
                description = "Lifetime: 90s, 5m, 2h, 1d or ISO-8601 like PT12H; 1s to 24h (default: ${DEFAULT-VALUE}).")
        Duration ttl;

        @Option(names = {"-o", "--output"}, paramLabel = "FILE",
                description = "Write the token to FILE instead of stdout: created rw------- before any byte is "
                        + "written, an existing owner-only FILE is replaced atomically, one that group/others may "
                        + "access is refused (exit 3). Nothing is printed on stdout then.")
        Path output;

        @Override
        public Integer call() {
            Cli.requireNonBlank(spec, environment, "--env");
            Cli.requireRange(spec, ttl, "--ttl", Duration.ofSeconds(1), GrantIssuer.MAX_TTL);
            KeyDirectory dir = GatewayCli.openKeys(keys);
            String token = new GrantIssuer(dir.signingKey(), Clock.systemUTC()).issueConnectionToken(environment, ttl);
            GatewayCli.emitSecret(output, token);
            return ExitCodes.OK;
        }
    }
}
