package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.ingress.doctor.CredentialsCheck;
import dev.previewtunnel.ingress.doctor.OwnerOnlyFileCheck;
import dev.previewtunnel.ingress.doctor.RunningIngressCheck;
import dev.previewtunnel.ingress.doctor.StateDirCheck;
import dev.previewtunnel.ingress.doctor.TunnelChecks;
import dev.previewtunnel.ingress.doctor.UnnamedEnvironmentsCheck;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code doctor}: checks what usually goes wrong on the desktop side and says what to do next. Observes only: it
 * reads files, asks the running ingress for its status, and opens test connections (a WebSocket upgrade with the
 * token, a tunnel stream per grant, a proxy request without credentials), all closed at once; it never writes,
 * starts or stops anything.
 */
@Command(name = "doctor",
        mixinStandardHelpOptions = true,
        versionProvider = IngressVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  desktop-ingress doctor",
                "  desktop-ingress doctor --gateway ws://127.0.0.1:7443/tunnel \\",
                "      --token-file ~/ptun-token --grant-file ~/ptun-grant"},
        sortOptions = false,
        description = {
                "Check the desktop side and say what to fix: the state directory and credentials files, the "
                        + "permissions of the token, environment token, grant, gateway CA and refresh-token files, the "
                        + "running ingress and its proxy (--proxy for one started with --no-control), the gateway "
                        + "and each environment's own gateway (--environment-gateway; reachable, token accepted or "
                        + "refused and why, clock skew from its Date header), and, given grants, each target through "
                        + "the gateway 'run' would send its streams to (its environment's own, else --gateway).",
                "Reads the same settings as 'run' (flags, PTUN_INGRESS_* variables, --config file); the gateway URL "
                        + "defaults to the one the running ingress uses. Prints one line per check: ok, warn, "
                        + "fail or skip, the check's name and what to do next; --json prints one JSON object per "
                        + "check.",
                "Only observes: never writes a file, starts or stops anything. Exits 0 when nothing failed, else "
                        + "with the first failure's code (2 unreachable, 3 refused, 1 missing setting)."})
final class DoctorCommand implements Callable<Integer> {
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    @Spec
    CommandSpec spec;

    @Option(names = "--config", paramLabel = "FILE", description = "The JSON config file 'run' uses.")
    Path config;

    @Option(names = "--gateway", paramLabel = "URL",
            description = "The gateway's tunnel URL (default: the one the running ingress uses).")
    String gateway;

    @Option(names = "--token-file", paramLabel = "FILE", description = "The connection token to check.")
    Path tokenFile;

    @Option(names = "--gateway-ca", paramLabel = "PEM", description = "CA to trust for a wss:// gateway.")
    Path gatewayCa;

    @Option(names = "--grant-file", paramLabel = "FILE",
            description = "Grants to try: each target is opened through the tunnel and closed at once. Repeatable.")
    List<Path> grantFiles = new ArrayList<>();

    @Option(names = "--grant-refresh-token-file", paramLabel = "FILE",
            description = "The bearer token file of --grant-refresh-url (only its permissions are checked).")
    Path grantRefreshTokenFile;

    @Option(names = "--state-dir", paramLabel = "DIR", description = "State directory of 'run'.")
    Path stateDir;

    @Option(names = "--proxy", paramLabel = "HOST:PORT",
            description = "The proxy of an ingress started with --no-control (it writes no control.json to find it "
                    + "by): checked to answer like desktop-ingress's proxy.")
    String proxyAddress;

    @Option(names = "--json", description = "One JSON object per check instead of text lines.")
    boolean json;

    @ArgGroup(validate = false, heading = "%nSeveral environments, as for 'run' (each also PTUN_INGRESS_<NAME>, "
            + "comma-separated when repeatable, and a config-file key; see docs/desktop-ingress.md):%n")
    EnvironmentOptions environments = new EnvironmentOptions();

    /** The clock compared against the gateway's; replaced by tests. */
    Clock clock = Clock.systemUTC();

    /** Reads the settings as 'run' does, then runs the checks (ingress.doctor) in the order they are printed. */
    @Override
    public Integer call() {
        DoctorReport report = new DoctorReport(spec.commandLine().getOut(), json);
        Settings s = report.loadSettings(spec, config, IngressCli.ENV_PREFIX, RunCommand.CONFIG_KEYS);
        if (s == null) {
            report.summary("desktop-ingress");
            return report.exitCode();
        }
        Path dir = report.setting(() -> s.path("state-dir", stateDir, IngressCli.defaultStateDir()));
        String gatewayText = report.setting(() -> s.string("gateway", gateway, null));
        Path token = report.setting(() -> s.path("token-file", tokenFile, null));
        Path ca = report.setting(() -> s.path("gateway-ca", gatewayCa, null));
        List<Path> read = report.setting(() -> s.paths("grant-file", grantFiles));
        List<Path> grantPaths = read == null ? List.of() : read;
        Path refreshToken = report.setting(() -> s.path("grant-refresh-token-file", grantRefreshTokenFile, null));
        Map<String, EnvironmentOptions.Endpoint> endpoints = report.setting(() -> environments.endpoints(spec, s));
        Map<String, TunnelChecks.OwnGateway> own = new LinkedHashMap<>();
        (endpoints == null ? Map.<String, EnvironmentOptions.Endpoint>of() : endpoints).forEach((environment, e) ->
                own.put(environment, new TunnelChecks.OwnGateway(e.url(), e.tokenFile())));
        report.setting(() -> environments.suffix(s)); // only validated, as 'run' would

        JsonNode running = null;
        if (dir != null) {
            if (new StateDirCheck(dir).run(report)) {
                new CredentialsCheck(dir).run(report);
            }
            running = new RunningIngressCheck(dir, proxyAddress, () -> ControlClient.open(dir).get("/v1/status"),
                    TIMEOUT).run(report);
        }
        OwnerOnlyFileCheck.ofRun(token, own, grantPaths, ca, refreshToken).forEach(c -> c.run(report));
        if (running != null) {
            new UnnamedEnvironmentsCheck(running, own.keySet()).run(report);
            if (gatewayText == null && running.hasNonNull("gateway")) {
                gatewayText = running.get("gateway").asText();
            }
        }
        new TunnelChecks(gatewayUri(report, gatewayText), token, own, grantPaths, () -> IngressCli.clientTls(spec, ca),
                TIMEOUT, clock).run(report);
        report.summary("desktop-ingress");
        return report.exitCode();
    }

    /** The gateway URL, or null with the {@code gateway} check failed. */
    private URI gatewayUri(DoctorReport report, String text) {
        if (text == null) {
            report.fail("gateway", ExitCodes.USAGE, "no gateway URL: give --gateway ws://HOST:PORT/tunnel (the url "
                    + "in env-gateway's ready line), PTUN_INGRESS_GATEWAY, or start the ingress first");
            return null;
        }
        try {
            return IngressCli.parseGateway(spec, "--gateway", text);
        } catch (ParameterException e) {
            report.fail("gateway", ExitCodes.USAGE, e.getMessage());
            return null;
        }
    }
}
