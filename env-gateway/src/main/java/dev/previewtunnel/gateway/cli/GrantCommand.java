package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.mux.wire.Authority;
import io.netty.util.NetUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.Callable;

/** {@code grant issue}: a short-lived grant for one session to reach one target. */
@Command(name = "grant",
        mixinStandardHelpOptions = true,
        versionProvider = GatewayVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  env-gateway grant issue --keys ~/.ptun-keys --env dev1 --session web \\",
                        "      --target localhost:5173 -o ~/ptun-grant"},
        synopsisSubcommandLabel = "issue",
        description = {
                "Issue grants: signed, short-lived permissions for one session to open tunnel streams to one "
                        + "target (HOST:PORT) in one environment.",
                "Grants travel in the ptun-grant header of each stream, never in a URL, and should live "
                        + "minutes."},
        subcommands = GrantCommand.Issue.class)
final class GrantCommand {

    /** Values of {@code --protocol}; lower-case because they are the claim values. */
    enum Protocol { tcp, http }

    @Command(name = "issue",
            mixinStandardHelpOptions = true,
            versionProvider = GatewayVersionProvider.class,
            exitCodeOnInvalidInput = ExitCodes.USAGE,
            exitCodeOnExecutionException = ExitCodes.INTERNAL,
            footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
            footer = {"  env-gateway grant issue --keys ~/.ptun-keys --env dev1 --session web \\",
                        "      --target localhost:5173 -o ~/ptun-grant",
                    "  env-gateway grant issue --keys ~/.ptun-keys --env dev1 --session api \\",
                    "      --target 127.0.0.1:8080 --protocol http --ttl 5m"},
            description = {
                    "Sign a grant and print it on stdout (exactly one line, the JWT), or write it to -o FILE.",
                    "The grant lets SESSION open streams through the gateway of ENV to TARGET only. It is "
                            + "sent in the ptun-grant header of a stream, never in a URL; treat it as a secret "
                            + "until it expires. Grants should live minutes: the gateway refuses grants whose "
                            + "lifetime exceeds its --max-grant-lifetime (default 15m), and at most 24h can be "
                            + "issued."})
    static final class Issue implements Callable<Integer> {
        private static final Logger log = LoggerFactory.getLogger(Issue.class);

        @Spec
        CommandSpec spec;

        @Option(names = "--keys", required = true, paramLabel = "DIR",
                description = "Key directory holding the signing key (see 'keys init') (required).")
        Path keys;

        @Option(names = "--env", required = true, paramLabel = "ENV",
                description = "Environment the grant is for; must match the gateway's --env (required).")
        String environment;

        @Option(names = "--session", required = true, paramLabel = "SESSION",
                description = "Preview session id the grant belongs to (required).")
        String session;

        @Option(names = "--target", required = true, paramLabel = "HOST:PORT",
                description = "The only target the grant allows, e.g. localhost:5173, 127.0.0.1:8080 or "
                        + "[::1]:5173 (IPv6 in brackets) (required).")
        String target;

        @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "10m",
                converter = Converters.DurationConverter.class,
                description = "Lifetime: 90s, 5m, 2h, 1d or ISO-8601 like PT5M; 1s to 24h (default: ${DEFAULT-VALUE}).")
        Duration ttl;

        @Option(names = "--protocol", paramLabel = "tcp|http", defaultValue = "tcp",
                description = "What the target speaks: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
        Protocol protocol;

        @Option(names = "--provider", paramLabel = "P",
                description = "Optional, informational: which agent/provider opened the preview (default: none).")
        String provider;

        @Option(names = "--thread", paramLabel = "T",
                description = "Optional, informational: conversation/thread id (default: none).")
        String thread;

        @Option(names = {"-o", "--output"}, paramLabel = "FILE",
                description = "Write the grant to FILE instead of stdout: created rw------- before any byte is "
                        + "written, an existing owner-only FILE is replaced atomically, one that group/others may "
                        + "access is refused (exit 3). Nothing is printed on stdout then.")
        Path output;

        @Override
        public Integer call() {
            Authority authority = parseTarget(spec, target);
            Cli.requireNonBlank(spec, environment, "--env");
            Cli.requireNonBlank(spec, session, "--session");
            if (provider != null) {
                Cli.requireNonBlank(spec, provider, "--provider");
            }
            if (thread != null) {
                Cli.requireNonBlank(spec, thread, "--thread");
            }
            Cli.requireRange(spec, ttl, "--ttl", Duration.ofSeconds(1), GrantIssuer.MAX_TTL);
            GrantSpec grant;
            try {
                grant = new GrantSpec(environment, session, authority.host(), authority.port(), protocol.name(),
                        provider, thread);
            } catch (IllegalArgumentException e) {
                throw Cli.usage(spec, "invalid grant: " + e.getMessage());
            }
            Duration defaultCap = VerifierPolicy.defaults().maxGrantLifetime();
            if (ttl.compareTo(defaultCap) > 0) {
                log.warn("grant ttl {} exceeds the gateway's default --max-grant-lifetime {}: a gateway with the "
                        + "default refuses it; grants should live minutes", Cli.human(ttl), Cli.human(defaultCap));
            }
            warnIfNotLoopback(authority);

            KeyDirectory dir = GatewayCli.openKeys(keys);
            String jwt = new GrantIssuer(dir.signingKey(), Clock.systemUTC()).issueGrant(grant, ttl);
            GatewayCli.emitSecret(output, jwt);
            return ExitCodes.OK;
        }

        private static void warnIfNotLoopback(Authority authority) {
            byte[] literal = NetUtil.createByteArrayFromIpAddressString(authority.host());
            if (literal == null) {
                return; // a name: the gateway resolves it and checks every address
            }
            try {
                if (!InetAddress.getByAddress(literal).isLoopbackAddress()) {
                    log.warn("target {} is not a loopback address: the gateway refuses it unless started with "
                            + "--allow-target covering it", authority);
                }
            } catch (UnknownHostException e) {
                // cannot happen for a 4 or 16 byte literal
            }
        }
    }

    static Authority parseTarget(CommandSpec spec, String text) {
        try {
            return Authority.parse(text);
        } catch (IllegalArgumentException e) {
            throw Cli.usage(spec, "--target must be HOST:PORT (e.g. localhost:5173 or [::1]:5173), got '"
                    + Cli.shown(text) + "': " + e.getMessage());
        }
    }
}
