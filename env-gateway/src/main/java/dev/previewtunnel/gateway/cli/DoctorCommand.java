package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.gateway.doctor.ClockCheck;
import dev.previewtunnel.gateway.doctor.GrantsCheck;
import dev.previewtunnel.gateway.doctor.KeysCheck;
import dev.previewtunnel.gateway.doctor.ListenCheck;
import dev.previewtunnel.gateway.doctor.ServedEnvironmentCheck;
import dev.previewtunnel.gateway.doctor.TargetReachCheck;
import dev.previewtunnel.gateway.doctor.TlsFilesCheck;
import dev.previewtunnel.gateway.doctor.TokenCheck;
import dev.previewtunnel.gateway.policy.Cidr;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.VerificationKeys;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.mux.wire.MuxProtocol;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code doctor}: checks what usually goes wrong on the gateway side and says what to do next. Observes only: it
 * reads files and opens test connections; it never writes, starts or stops anything (to see whether the listen
 * address can be bound it binds it for an instant and releases it).
 */
@Command(name = "doctor",
        mixinStandardHelpOptions = true,
        versionProvider = GatewayVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  env-gateway doctor --keys ~/.ptun-keys --env dev1",
                "  env-gateway doctor --keys ~/.ptun-keys --env dev1 --listen 127.0.0.1:7443 \\",
                "      --target localhost:5173"},
        sortOptions = false,
        description = {
                "Check the gateway's setup and say what to fix: the key directory, the signing key's permissions, "
                        + "the verify keys, the clock, the listen address, TLS files, and (optionally) a target, "
                        + "a connection token and grants.",
                "Reads the same settings as 'serve' (flags, PTUN_GATEWAY_* variables, --config file). Prints one "
                        + "line per check: ok, warn, fail or skip, the check's name and what to do next; --json "
                        + "prints one JSON object per check instead.",
                "Only observes: never writes a file, starts or stops anything. Exits 0 when nothing failed, "
                        + "else with the first failure's code (2 unreachable, 3 refused, 1 missing setting)."})
final class DoctorCommand implements Callable<Integer> {
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(2);

    @Spec
    CommandSpec spec;

    @Option(names = "--config", paramLabel = "FILE", description = "The JSON config file 'serve' uses.")
    Path config;

    @Option(names = "--keys", paramLabel = "DIR", description = "Key directory or verify-keys.jwks.json, as for serve.")
    Path keys;

    @Option(names = "--env", paramLabel = "ENV", description = "The environment serve serves.")
    String environment;

    @Option(names = "--listen", paramLabel = "HOST:PORT|unix:PATH", description = "The address serve listens on.")
    String listen;

    @Option(names = "--target", paramLabel = "HOST:PORT",
            description = "A target grants name (a dev server, e.g. localhost:5173): check the target policy "
                    + "allows it and that something accepts connections there. Repeatable.")
    List<String> targets = new ArrayList<>();

    @Option(names = "--token-file", paramLabel = "FILE",
            description = "A connection token ('token issue'): check it verifies for ENV with these keys.")
    Path tokenFile;

    @Option(names = "--grant-file", paramLabel = "FILE",
            description = "A file of grants, one per line: check each verifies for ENV and its target.")
    Path grantFile;

    @Option(names = "--json", description = "One JSON object per check instead of text lines.")
    boolean json;

    /** The clock compared against; replaced by tests. */
    Clock clock = Clock.systemUTC();

    /** Reads the settings as 'serve' does, then runs the checks (gateway.doctor) in the order they are printed. */
    @Override
    public Integer call() {
        DoctorReport report = new DoctorReport(spec.commandLine().getOut(), json);
        Settings s = report.loadSettings(spec, config, GatewayCli.ENV_PREFIX, ServeCommand.CONFIG_KEYS);
        if (s == null) {
            report.summary("env-gateway");
            return report.exitCode();
        }
        String env = report.setting(() -> s.string("env", environment, null));
        Path keysPath = report.setting(() -> s.path("keys", keys, null));
        String listenText = report.setting(() -> s.string("listen", listen, null));
        String path = report.setting(() -> s.string("path", null, MuxProtocol.DEFAULT_PATH));
        Path cert = report.setting(() -> s.path("tls-cert", null, null));
        Path key = report.setting(() -> s.path("tls-key", null, null));
        List<Cidr> allowed = report.setting(() -> s.list("allow-target", null, CidrConverter::parse));

        VerificationKeys verifyKeys = new KeysCheck(keysPath).run(report);
        new ClockCheck(keysPath, clock).run(report);
        new ServedEnvironmentCheck(env).run(report);
        new ListenCheck(listenText, path == null ? MuxProtocol.DEFAULT_PATH : path, cert != null, CONNECT_TIMEOUT)
                .run(report);
        new TlsFilesCheck(cert, key, clock).run(report);
        new TargetReachCheck(targets, allowed == null ? List.of() : allowed, CONNECT_TIMEOUT).run(report);
        if (verifyKeys != null && env != null) {
            GrantVerifier verifier = new GrantVerifier(verifyKeys, clock, VerifierPolicy.defaults());
            if (tokenFile != null) {
                new TokenCheck(tokenFile, verifier, env).run(report);
            }
            if (grantFile != null) {
                new GrantsCheck(grantFile, verifier, env).run(report);
            }
        } else if (tokenFile != null || grantFile != null) {
            report.skip("token", "cannot check tokens or grants without valid verify keys and an environment");
        }
        report.summary("env-gateway");
        return report.exitCode();
    }
}
