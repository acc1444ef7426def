package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.ingress.control.ControlServer;
import dev.previewtunnel.ingress.session.SessionStore;
import dev.previewtunnel.mux.Authority;
import dev.previewtunnel.mux.MuxProtocol;
import dev.previewtunnel.mux.MuxSettings;
import dev.previewtunnel.mux.TunnelClient;
import dev.previewtunnel.mux.TunnelConnection;
import dev.previewtunnel.mux.TunnelStreamException;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.Future;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

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
        footer = IngressMain.FOOTER,
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
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration TIMEOUT = Duration.ofSeconds(5);
    /** Beyond this the gateway's grant checks (30 s allowance) and the local expiry warnings disagree. */
    private static final long SKEW_FAIL_SECONDS = 30;
    private static final long SKEW_WARN_SECONDS = 5;

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

    private DoctorReport report;

    @Override
    public Integer call() {
        report = new DoctorReport(spec.commandLine().getOut(), json);
        Settings s = report.loadSettings(spec, config, IngressCli.ENV_PREFIX, RunCommand.CONFIG_KEYS);
        if (s == null) {
            report.summary("desktop-ingress");
            return report.exitCode();
        }
        Path dir = report.setting(() -> s.path("state-dir", stateDir, IngressCli.defaultStateDir()));
        String gatewayText = report.setting(() -> s.string("gateway", gateway, null));
        Path token = report.setting(() -> s.path("token-file", tokenFile, null));
        Path ca = report.setting(() -> s.path("gateway-ca", gatewayCa, null));
        List<Path> grantPaths = report.setting(() -> s.paths("grant-file", grantFiles));
        Path refreshToken = report.setting(() -> s.path("grant-refresh-token-file", grantRefreshTokenFile, null));
        Map<String, EnvironmentOptions.Endpoint> read = report.setting(() -> environments.endpoints(spec, s));
        Map<String, EnvironmentOptions.Endpoint> ownGateways = read == null ? Map.of() : read;
        report.setting(() -> environments.suffix(s)); // only validated, as 'run' would

        JsonNode running = null;
        if (dir != null) {
            checkStateDir(dir);
            running = checkProxy(dir);
        }
        checkOwnerOnly(token, grantPaths == null ? List.of() : grantPaths, ca, refreshToken, ownGateways);
        if (gatewayText == null && running != null && running.hasNonNull("gateway")) {
            gatewayText = running.get("gateway").asText();
        }
        if (running != null) {
            // Without the running ingress's environment settings, its environments' grants would be checked
            // through the default gateway, which refuses them: say why.
            running.path("environments").fields().forEachRemaining(e -> {
                if (!ownGateways.containsKey(e.getKey())) {
                    report.warn("environment-gateway", "the running ingress sends environment '"
                            + Cli.shown(e.getKey()) + "' to a gateway of its own (" + Cli.shown(e.getValue()
                            .path("gateway").asText()) + ") that these settings do not name: give the same "
                            + "--environment-gateway " + Cli.shown(e.getKey()) + "=URL and --environment-token-file "
                            + Cli.shown(e.getKey()) + "=FILE as 'run' to check it and that environment's grants");
                }
            });
        }
        URI gatewayUri = null;
        if (gatewayText == null) {
            report.fail("gateway", ExitCodes.USAGE, "no gateway URL: give --gateway ws://HOST:PORT/tunnel (the url in "
                    + "env-gateway's ready line), PTUN_INGRESS_GATEWAY, or start the ingress first");
        } else {
            try {
                gatewayUri = IngressCli.parseGateway(spec, "--gateway", gatewayText);
            } catch (ParameterException e) {
                report.fail("gateway", ExitCodes.USAGE, e.getMessage());
            }
        }
        String tokenValue = token == null ? null : readToken(GatewayLabel.DEFAULT, token);
        boolean tokenAccepted = false;
        if (gatewayUri != null) {
            tokenAccepted = checkGateway(GatewayLabel.DEFAULT, gatewayUri, tokenValue, token, ca);
        }
        Tunnel defaultTunnel = new Tunnel(GatewayLabel.DEFAULT, gatewayUri, tokenValue, tokenAccepted);
        // Each environment's own gateway, as 'run' would use it: the same checks, labelled with the environment.
        Map<String, Tunnel> ownTunnels = new LinkedHashMap<>();
        ownGateways.forEach((environment, endpoint) -> ownTunnels.put(environment,
                checkEnvironmentGateway(environment, endpoint, ca)));
        checkTargets(defaultTunnel, ownTunnels, ca, grantPaths == null ? List.of() : grantPaths);
        report.summary("desktop-ingress");
        return report.exitCode();
    }

    // ---- state directory, credentials, the running ingress

    private void checkStateDir(Path dir) {
        if (!Files.isDirectory(dir)) {
            report.warn("state-dir", "state directory " + dir + " does not exist yet ('run' creates it, rwx------); "
                    + "if an ingress runs with another one, give it with --state-dir");
            return;
        }
        if (shared(dir)) {
            report.warn("state-dir", "state directory " + dir + " is accessible by group/others (" + perms(dir)
                    + "): chmod 700 " + dir);
        } else {
            report.ok("state-dir", dir + " exists (" + perms(dir) + ")");
        }
        List<Path> secrets = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "session-*.credentials.json")) {
            files.forEach(secrets::add);
        } catch (IOException e) {
            report.fail("credentials", ExitCodes.REFUSED, "cannot list " + dir + " (" + e.getClass().getSimpleName()
                    + "): run doctor as the user that runs the ingress");
            return;
        }
        Path control = dir.resolve(ControlServer.STATE_FILE);
        if (Files.exists(control)) {
            secrets.add(control);
        }
        Path saved = dir.resolve(SessionStore.FILE); // the sessions' grants, kept across restarts
        if (Files.exists(saved)) {
            secrets.add(saved);
        }
        if (secrets.isEmpty()) {
            report.skip("credentials", "no credentials files in " + dir + " (no ingress has run with it)");
            return;
        }
        boolean bad = false;
        for (Path f : secrets) {
            if (shared(f)) {
                bad = true;
                report.fail("credentials", ExitCodes.REFUSED, f + " is readable by group/others (" + perms(f) + "): "
                        + "anyone on this machine could use " + (f.equals(control) ? "the control API"
                        : f.equals(saved) ? "the grants it holds" : "that session's access to the environment") + "; chmod 600 " + f);
            }
        }
        if (!bad) {
            report.ok("credentials", secrets.size() + " file(s) with secrets in " + dir + ", all owner-only (rw-------)");
        }
    }

    /**
     * The files 'run' reads its secrets and its trust from must be the user's alone: a token, grant or refresh
     * token others can read is theirs to use (owner-only). A CA certificate is public, so it may be readable, but
     * one others can write lets them impersonate the gateway. Files that do not exist are left to the checks that
     * read them.
     */
    private void checkOwnerOnly(Path token, List<Path> grants, Path ca, Path refreshToken,
                                Map<String, EnvironmentOptions.Endpoint> ownGateways) {
        ownerOnly("token-file", token, true, "the connection token: anyone on this machine could open tunnel connections "
                + "to the environment with it");
        ownGateways.forEach((environment, endpoint) -> ownerOnly("environment-token-file", endpoint.tokenFile(), true,
                "the connection token of the gateway of environment '" + Cli.shown(environment) + "' "
                        + "(--environment-token-file): anyone on this machine could open tunnel connections to that "
                        + "environment with it"));
        for (Path grant : grants) {
            ownerOnly("grant-file", grant, true, "grants: anyone on this machine could open their targets with them");
        }
        ownerOnly("gateway-ca", ca, false, "the CA that authenticates the gateway: whoever can change it can "
                + "impersonate the gateway and read the tunnel's traffic");
        ownerOnly("grant-refresh-token-file", refreshToken, true, "the bearer token of --grant-refresh-url: anyone on "
                + "this machine could fetch fresh grants with it");
    }

    private void ownerOnly(String check, Path file, boolean secret, String holds) {
        if (file == null || !Files.isRegularFile(file)) {
            return;
        }
        if (secret ? shared(file) : writableByOthers(file)) {
            report.fail(check, ExitCodes.REFUSED, file + " is " + (secret ? "accessible" : "writable")
                    + " by group/others (" + perms(file) + "); it holds " + holds + ": chmod 600 " + file);
        } else {
            report.ok(check, file + (secret ? " is owner-only (" : " is not writable by others (") + perms(file) + ")");
        }
    }

    private static boolean writableByOthers(Path p) {
        try {
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(p);
            return perms.contains(PosixFilePermission.GROUP_WRITE) || perms.contains(PosixFilePermission.OTHERS_WRITE);
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    /** The running ingress's status, or null (reported). */
    private JsonNode checkProxy(Path dir) {
        if (!Files.exists(dir.resolve(ControlServer.STATE_FILE))) {
            if (proxyAddress == null) {
                report.fail("proxy", ExitCodes.UNREACHABLE, "no desktop-ingress is running with state directory "
                        + dir + " (no control.json): start one with 'desktop-ingress run --gateway URL --token-file "
                        + "FILE' (for one started with --no-control, give its proxy with --proxy HOST:PORT)");
                return null;
            }
            // An ingress without a control API: only its proxy can be observed.
            String answer = probeProxy(proxyAddress);
            if (answer == null) {
                report.ok("proxy", "proxy " + proxyAddress + " answers like desktop-ingress (407 without a session "
                        + "credential); browsers: --proxy-server=http://" + proxyAddress
                        + " --proxy-bypass-list='<-loopback>'");
            } else {
                report.fail("proxy", ExitCodes.UNREACHABLE, "no desktop-ingress proxy at " + proxyAddress + ": "
                        + answer + "; start it, or give the proxy address of its ready line");
            }
            return null;
        }
        JsonNode status;
        try {
            status = ControlClient.open(dir).get("/v1/status");
        } catch (CliException e) {
            report.fail("proxy", e.exitCode(), e.getMessage());
            return null;
        }
        String proxy = status.path("proxy").asText();
        String answer = probeProxy(proxy);
        JsonNode tunnel = status.path("tunnel");
        String tunnelState = tunnel.path("state").asText() + " " + tunnel.path("connected").asInt() + "/"
                + tunnel.path("size").asInt();
        if (answer == null) {
            report.ok("proxy", "ingress running: proxy " + proxy + " answers (407 without a session credential), tunnel "
                    + tunnelState + "; browsers: --proxy-server=http://" + proxy + " --proxy-bypass-list='<-loopback>'");
        } else {
            report.fail("proxy", ExitCodes.UNREACHABLE, "the ingress's control API answers but its proxy " + proxy
                    + " does not behave: " + answer);
        }
        if (!"connected".equals(tunnel.path("state").asText())) {
            report.warn("tunnel", "the running ingress is reconnecting to the gateway" + reconnectingDetail(tunnel)
                    + "; browsers get 502 gateway_unreachable meanwhile; see the gateway checks below");
        }
        status.path("environments").fields().forEachRemaining(e -> {
            JsonNode own = e.getValue().path("tunnel");
            if (!"connected".equals(own.path("state").asText())) {
                report.warn("environment-tunnel", "the running ingress is reconnecting to the gateway of environment '"
                        + Cli.shown(e.getKey()) + "'" + reconnectingDetail(own) + "; that environment's browser "
                        + "requests get 502 gateway_unreachable meanwhile; see the environment-gateway checks below");
            }
        });
        return status;
    }

    /** " since T (last error: E)" from a status {@code tunnel} object, each part only when present. */
    private static String reconnectingDetail(JsonNode tunnel) {
        return (tunnel.has("reconnectingSince") ? " since " + tunnel.get("reconnectingSince").asText() : "")
                + (tunnel.has("lastError") ? " (last error: " + Cli.shown(tunnel.get("lastError").asText()) + ")" : "");
    }

    /** Null when the proxy answers a credential-less request with 407 proxy_auth_required, else what went wrong. */
    private static String probeProxy(String hostPort) {
        int colon = hostPort.lastIndexOf(':');
        if (colon < 0) {
            return "no proxy address in the status";
        }
        String host = hostPort.substring(0, colon).replace("[", "").replace("]", "");
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, Integer.parseInt(hostPort.substring(colon + 1))),
                    (int) TIMEOUT.toMillis());
            socket.setSoTimeout((int) TIMEOUT.toMillis());
            OutputStream out = socket.getOutputStream();
            out.write(("GET http://doctor.invalid/ HTTP/1.1\r\nHost: doctor.invalid\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String head = new String(socket.getInputStream().readNBytes(1024), StandardCharsets.ISO_8859_1);
            if (head.startsWith("HTTP/1.1 407") && head.toLowerCase(Locale.ROOT).contains("proxy_auth_required")) {
                return null;
            }
            int eol = head.indexOf('\r');
            return "it answered '" + Cli.shown(eol > 0 ? head.substring(0, eol) : head) + "' instead of 407";
        } catch (IOException | NumberFormatException e) {
            return "cannot connect (" + e.getClass().getSimpleName() + ")";
        }
    }

    // ---- gateway, token, clock

    /**
     * Names one gateway in check ids and messages: the default one ({@code --gateway}) or an environment's own
     * ({@code --environment-gateway ENV=URL}), whose checks are {@code environment-gateway},
     * {@code environment-token} and {@code environment-clock} and whose messages name the environment.
     */
    private record GatewayLabel(String environment) {
        static final GatewayLabel DEFAULT = new GatewayLabel(null);

        String check(String name) {
            return environment == null ? name : "environment-" + name;
        }

        /** "the gateway" or "the gateway of environment 'staging'". */
        String who() {
            return environment == null ? "the gateway" : "the gateway of environment '" + Cli.shown(environment) + "'";
        }

        /** "the gateway's" clock, or that of an environment's gateway. */
        String whose() {
            return environment == null ? "the gateway's" : "the clock of " + who();
        }

        /** Where the token of this gateway is configured. */
        String tokenSetting() {
            return environment == null ? "--token-file FILE or PTUN_INGRESS_TOKEN_FILE"
                    : "--" + EnvironmentOptions.TOKEN_FILE + " " + Cli.shown(environment) + "=FILE";
        }
    }

    /** One gateway to open grants' targets through, once its checks are done. */
    private record Tunnel(GatewayLabel label, URI uri, String token, boolean accepted) {
        @Override
        public String toString() {
            return "Tunnel[" + label.who() + ", accepted=" + accepted + "]"; // never the token
        }
    }

    private String readToken(GatewayLabel g, Path file) {
        String check = g.check("token");
        String of = g.environment() == null ? "" : " (the token of " + g.who() + ")";
        try {
            List<String> lines = Files.readString(file).lines().map(String::strip)
                    .filter(l -> !l.isEmpty() && !l.startsWith("#")).toList();
            if (lines.size() != 1) {
                report.fail(check, ExitCodes.USAGE, file + of + " must hold the token on one line, found "
                        + lines.size());
                return null;
            }
            return lines.get(0);
        } catch (IOException e) {
            report.fail(check, ExitCodes.REFUSED, "cannot read the token file " + file + of + " ("
                    + e.getClass().getSimpleName() + ")");
            return null;
        }
    }

    /**
     * The checks of an environment's own gateway, the same as the default gateway's (reachable, token accepted,
     * clock), labelled with the environment. Returns the tunnel its grants' targets are opened through.
     */
    private Tunnel checkEnvironmentGateway(String environment, EnvironmentOptions.Endpoint endpoint, Path ca) {
        GatewayLabel label = new GatewayLabel(environment);
        String token = readToken(label, endpoint.tokenFile());
        boolean accepted = checkGateway(label, endpoint.url(), token, endpoint.tokenFile(), ca);
        return new Tunnel(label, endpoint.url(), token, accepted);
    }

    /** Returns true when the gateway accepted the token. */
    private boolean checkGateway(GatewayLabel g, URI gatewayUri, String token, Path tokenPath, Path ca) {
        boolean tls = "wss".equals(gatewayUri.getScheme());
        int port = gatewayUri.getPort() > 0 ? gatewayUri.getPort() : (tls ? 443 : 80);
        String hostPort = gatewayUri.getHost() + ":" + port;
        String path = gatewayUri.getRawPath() == null || gatewayUri.getRawPath().isEmpty() ? "/"
                : gatewayUri.getRawPath();
        String check = g.check("gateway");
        UpgradeAnswer answer;
        try {
            answer = upgrade(gatewayUri.getHost(), port, tls, ca, path, token);
        } catch (java.net.ConnectException | java.net.UnknownHostException | java.net.NoRouteToHostException e) {
            report.fail(check, ExitCodes.UNREACHABLE, "cannot reach " + g.who() + " at " + hostPort + " ("
                    + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()) + "): is "
                    + "'env-gateway serve' running there, and is the tunnel to it up (e.g. ssh -N -L " + port
                    + ":127.0.0.1:" + port + " ENV_HOST)?");
            return false;
        } catch (SocketTimeoutException e) {
            report.fail(check, ExitCodes.UNREACHABLE, g.who() + " at " + hostPort + " did not answer within "
                    + TIMEOUT.toSeconds() + " s: a firewall, or a forward to the wrong port?");
            return false;
        } catch (javax.net.ssl.SSLException e) {
            report.fail(check, ExitCodes.REFUSED, "TLS with " + g.who() + " at " + hostPort + " failed ("
                    + Cli.shown(e.getMessage()) + "): trust its CA with --gateway-ca PEM, and check its certificate "
                    + "names " + gatewayUri.getHost());
            return false;
        } catch (IOException | RuntimeException e) {
            report.fail(check, ExitCodes.UNREACHABLE, "cannot talk to " + g.who() + " at " + hostPort + " ("
                    + e.getClass().getSimpleName() + ")");
            return false;
        }
        String error = answer.error();
        String of = g.environment() == null ? "" : " (" + g.who() + ")";
        String reachable = g.who().substring("the ".length()) + " at " + hostPort + path + " reachable, speaks "
                + MuxProtocol.SUBPROTOCOL;
        switch (answer.status()) {
            case 101, 401 -> report.ok(check, reachable);
            case 404 -> report.fail(check, ExitCodes.REFUSED, "no tunnel endpoint at path " + path + " on "
                    + hostPort + of + ": use the url printed in env-gateway's ready line (its --path, default "
                    + MuxProtocol.DEFAULT_PATH + ")");
            case 426 -> report.fail(check, ExitCodes.REFUSED, "protocol_version_mismatch".equals(error)
                    ? g.who() + " speaks another tunnel protocol version (" + Cli.shown(answer.message())
                    + "): upgrade the older side (this build speaks " + MuxProtocol.SUBPROTOCOL + ")"
                    : hostPort + path + of + " refused the WebSocket upgrade (" + Cli.shown(answer.message()) + ")");
            default -> report.fail(check, ExitCodes.REFUSED, hostPort + of + " answered HTTP " + answer.status()
                    + " to a tunnel upgrade: it is not a preview-tunnel gateway (wrong port or forward?)");
        }
        checkClock(g, answer);
        if (answer.status() != 101 && answer.status() != 401) {
            return false;
        }
        if (token == null) {
            if (tokenPath == null) {
                report.skip(g.check("token"), "no token given (" + g.tokenSetting() + "): cannot check it is "
                        + "accepted");
            } // else its file could not be read, which is reported already
            return false;
        }
        if (answer.status() == 101) {
            report.ok(g.check("token"), g.who() + " accepted the connection token" + describeToken(token));
            return true;
        }
        report.fail(g.check("token"), ExitCodes.REFUSED, tokenAdvice(g, answer.message(), token, tokenPath));
        return false;
    }

    private void checkClock(GatewayLabel g, UpgradeAnswer answer) {
        String check = g.check("clock");
        String date = answer.headers().get("date");
        if (date == null) {
            report.warn(check, g.who() + " sent no Date header (an older gateway): clock skew not measured");
            return;
        }
        Instant theirs;
        try {
            theirs = ZonedDateTime.parse(date, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        } catch (DateTimeParseException e) {
            report.warn(check, "the Date header of " + g.who() + " is unreadable: clock skew not measured");
            return;
        }
        // The header has whole seconds and was written up to a round trip before we read it: allow 1 s.
        long skew = ChronoUnit.SECONDS.between(theirs, answer.receivedAt().truncatedTo(ChronoUnit.SECONDS));
        String direction = skew > 0 ? "ahead of" : "behind";
        long abs = Math.abs(skew);
        if (abs > SKEW_FAIL_SECONDS) {
            report.fail(check, ExitCodes.REFUSED, "this desktop's clock is " + abs + " s " + direction + " "
                    + g.whose() + ": grant expiry warnings and refreshes here disagree with the gateway, and grants "
                    + "issued here would look expired or not yet valid there (30 s allowance); turn on NTP "
                    + "(timedatectl set-ntp true) on both");
        } else if (abs > SKEW_WARN_SECONDS) {
            report.warn(check, "this desktop's clock is " + abs + " s " + direction + " " + g.whose()
                    + " (within the 30 s allowance); turn on NTP");
        } else {
            report.ok(check, "clock skew against " + g.who() + ": " + (skew >= 0 ? "+" : "") + skew + " s");
        }
    }

    /** What to do about a refused token, from the gateway's reason ("connection token refused (grant_...)"). */
    private String tokenAdvice(GatewayLabel g, String message, String token, Path tokenPath) {
        TokenView view = TokenView.peek(token);
        String reason = message == null ? "" : message;
        String where = tokenPath == null ? "the token" : "the token in " + tokenPath;
        String refused = g.who() + " refused " + where;
        if (reason.contains("grant_wrong_environment")) {
            return refused + " (grant_wrong_environment): it is for environment '"
                    + (view == null ? "?" : Cli.shown(view.env())) + "' and the gateway serves another; issue one "
                    + (g.environment() == null
                    ? "with 'env-gateway token issue --env <the gateway's env>' (its ready line names it)"
                    : "with 'env-gateway token issue --env " + Cli.shown(g.environment()) + "' on that gateway's "
                    + "host, or fix --environment-gateway if the URL is another environment's gateway");
        }
        if (reason.contains("grant_expired")) {
            return refused + " (grant_expired)" + (view == null || view.exp() == null ? ""
                    : ": it expired at " + view.exp()) + "; issue a new one with 'env-gateway token issue'";
        }
        if (reason.contains("grant_unknown_key") || reason.contains("grant_bad_signature")) {
            return refused + " (" + (reason.contains("unknown") ? "grant_unknown_key"
                    : "grant_bad_signature") + "): it was signed by a key the gateway does not trust"
                    + (view == null || view.kid() == null ? "" : " (kid " + Cli.shown(view.kid()) + ")")
                    + "; issue it from the key directory whose verify-keys.jwks.json the gateway reads";
        }
        if (reason.contains("grant_not_yet_valid")) {
            return refused + " (grant_not_yet_valid): the issuing host's clock is ahead of "
                    + "the gateway's; fix the clocks (NTP)";
        }
        if (reason.contains("grant_wrong_audience")) {
            return refused + " (grant_wrong_audience): that is a grant, not a connection "
                    + "token; use 'env-gateway token issue'";
        }
        return refused + " (" + Cli.shown(reason) + "): issue a new one with 'env-gateway token issue'";
    }

    private static String describeToken(String token) {
        TokenView view = TokenView.peek(token);
        if (view == null) {
            return "";
        }
        return " (environment '" + Cli.shown(view.env()) + "'" + (view.exp() == null ? "" : ", expires " + view.exp())
                + ")";
    }

    // ---- targets through the tunnel

    /**
     * Opens each grant's target through the gateway 'run' would send it to: its environment's own gateway when
     * it has one, else the default gateway.
     */
    private void checkTargets(Tunnel defaultTunnel, Map<String, Tunnel> ownTunnels, Path ca, List<Path> grantPaths) {
        if (grantPaths.isEmpty()) {
            report.skip("target", "no --grant-file given: add one to open its target through the tunnel");
            return;
        }
        List<String> grants = new ArrayList<>();
        for (Path p : grantPaths) {
            try {
                Files.readString(p).lines().map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#"))
                        .forEach(grants::add);
            } catch (IOException e) {
                report.fail("target", ExitCodes.REFUSED, "cannot read the grant file " + p + " ("
                        + e.getClass().getSimpleName() + ")");
            }
        }
        Map<Tunnel, List<Grant>> byTunnel = new LinkedHashMap<>();
        for (String grant : grants) {
            UnverifiedGrantView view;
            try {
                view = UnverifiedGrantView.decode(grant);
            } catch (IllegalArgumentException e) {
                report.fail("target", ExitCodes.USAGE, "a line of the grant file is not a grant (the value is not "
                        + "shown)");
                continue;
            }
            Tunnel tunnel = ownTunnels.getOrDefault(view.environment(), defaultTunnel);
            byTunnel.computeIfAbsent(tunnel, t -> new ArrayList<>()).add(new Grant(grant, view));
        }
        if (byTunnel.isEmpty()) {
            return;
        }
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("ptun-doctor", true),
                NioIoHandler.newFactory());
        try {
            byTunnel.forEach((tunnel, list) -> checkTargets(group, tunnel, ca, list));
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

    private record Grant(String value, UnverifiedGrantView view) {
        @Override
        public String toString() {
            return "Grant[" + view.jti() + "]"; // never the grant
        }
    }

    private void checkTargets(EventLoopGroup group, Tunnel tunnel, Path ca, List<Grant> grants) {
        GatewayLabel g = tunnel.label();
        if (!tunnel.accepted() || tunnel.uri() == null) {
            report.skip("target", g.environment() == null
                    ? "cannot open targets through the tunnel without a gateway that accepts the token"
                    : "cannot open the targets of environment '" + Cli.shown(g.environment()) + "' without "
                    + g.who() + " accepting its token (see the environment-gateway and environment-token checks)");
            return;
        }
        SslContext ssl;
        try {
            ssl = "wss".equals(tunnel.uri().getScheme()) ? IngressCli.clientTls(spec, ca) : null;
        } catch (CliException | ParameterException e) {
            report.fail("target", ExitCodes.REFUSED, e.getMessage());
            return;
        }
        Future<TunnelConnection> connecting = new TunnelClient(group, NioSocketChannel.class,
                MuxSettings.defaults()).connect(tunnel.uri(), tunnel.token(), ssl, TIMEOUT);
        if (!connecting.awaitUninterruptibly(TIMEOUT.toMillis() * 2) || !connecting.isSuccess()) {
            report.fail("target", ExitCodes.UNREACHABLE, "cannot open a tunnel connection"
                    + (g.environment() == null ? "" : " to " + g.who()) + ": "
                    + (connecting.cause() == null ? "timed out" : Cli.shown(connecting.cause().getMessage())));
            return;
        }
        TunnelConnection connection = connecting.getNow();
        try {
            for (Grant grant : grants) {
                checkTarget(connection, grant.value(), grant.view());
            }
        } finally {
            connection.channel().close().awaitUninterruptibly(TIMEOUT.toMillis());
        }
    }

    private void checkTarget(TunnelConnection connection, String grant, UnverifiedGrantView view) {
        Authority target = new Authority(view.targetHost(), view.targetPort());
        Future<Http2StreamChannel> open = connection.openStream(target, grant, TIMEOUT);
        if (!open.awaitUninterruptibly(TIMEOUT.toMillis() * 2)) {
            report.fail("target", ExitCodes.UNREACHABLE, target + ": the gateway did not answer the stream open in time");
            return;
        }
        if (open.isSuccess()) {
            open.getNow().close();
            report.ok("target", target + " opens through the tunnel (grant " + view.jti() + ", environment '"
                    + Cli.shown(view.environment()) + "')");
            return;
        }
        if (!(open.cause() instanceof TunnelStreamException e)) {
            report.fail("target", ExitCodes.UNREACHABLE, target + ": " + Cli.shown(String.valueOf(open.cause())));
            return;
        }
        String code = e.error().code();
        String detail = Cli.shown(e.getMessage());
        switch (e.error()) {
            case TARGET_REFUSED -> report.fail("target", ExitCodes.UNREACHABLE, "nothing listens on " + target
                    + " in the environment (target_refused): start the dev server there; browsers get a 502 page "
                    + "meanwhile");
            case DIAL_TIMEOUT, TARGET_UNREACHABLE -> report.fail("target", ExitCodes.UNREACHABLE, target + " cannot "
                    + "be reached from the gateway (" + code + ", " + detail + ")");
            case GRANT_EXPIRED -> report.fail("target", ExitCodes.REFUSED, "the grant for " + target + " expired ("
                    + view.expiresAt() + "): issue a new one with 'env-gateway grant issue' and 'grant add' it");
            case GRANT_REVOKED -> report.fail("target", ExitCodes.REFUSED, "the grant for " + target + " (or its "
                    + "session) was revoked on the gateway: issue a new one");
            case POLICY_REFUSED -> report.fail("target", ExitCodes.REFUSED, "the gateway's target policy refuses "
                    + target + " (" + detail + "): only loopback targets unless serve has --allow-target");
            default -> report.fail("target", ExitCodes.REFUSED, "the gateway refused a stream to " + target + " ("
                    + code + ": " + detail + ")");
        }
    }

    // ---- the raw upgrade

    private record UpgradeAnswer(int status, Map<String, String> headers, String error, String message,
                                 Instant receivedAt) {
    }

    /** One WebSocket upgrade as the ingress makes it, closed as soon as the answer is read. */
    private UpgradeAnswer upgrade(String host, int port, boolean tls, Path ca, String path, String token)
            throws IOException {
        Socket plain = new Socket();
        try {
            plain.connect(new InetSocketAddress(host, port), (int) TIMEOUT.toMillis());
            plain.setSoTimeout((int) TIMEOUT.toMillis());
            Socket socket = tls ? tls(plain, host, port, ca) : plain;
            byte[] key = new byte[16];
            new SecureRandom().nextBytes(key);
            StringBuilder req = new StringBuilder()
                    .append("GET ").append(path).append(" HTTP/1.1\r\n")
                    .append("Host: ").append(host.contains(":") ? "[" + host + "]" : host).append(':').append(port)
                    .append("\r\n")
                    .append("Upgrade: websocket\r\nConnection: Upgrade\r\n")
                    .append("Sec-WebSocket-Key: ").append(Base64.getEncoder().encodeToString(key)).append("\r\n")
                    .append("Sec-WebSocket-Version: 13\r\n")
                    .append("Sec-WebSocket-Protocol: ").append(MuxProtocol.SUBPROTOCOL).append("\r\n");
            if (token != null) {
                req.append(MuxProtocol.TOKEN_HEADER).append(": ").append(MuxProtocol.TOKEN_SCHEME).append(token)
                        .append("\r\n");
            }
            req.append("\r\n");
            OutputStream out = socket.getOutputStream();
            out.write(req.toString().getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            String head = readHead(in);
            Instant received = clock.instant();
            String[] lines = head.split("\r\n");
            String[] statusLine = lines[0].split(" ", 3);
            if (statusLine.length < 2 || !statusLine[0].startsWith("HTTP/")) {
                throw new IOException("not HTTP");
            }
            int status = Integer.parseInt(statusLine[1]);
            Map<String, String> headers = new HashMap<>();
            for (int i = 1; i < lines.length; i++) {
                int colon = lines[i].indexOf(':');
                if (colon > 0) {
                    headers.put(lines[i].substring(0, colon).strip().toLowerCase(Locale.ROOT),
                            lines[i].substring(colon + 1).strip());
                }
            }
            String error = null;
            String message = null;
            if (status != 101) {
                int length = parseLength(headers.get("content-length"));
                byte[] body = in.readNBytes(Math.min(length, 4096));
                try {
                    JsonNode node = JSON.readTree(body);
                    error = node == null ? null : node.path("error").asText(null);
                    message = node == null ? null : node.path("message").asText(null);
                } catch (IOException e) {
                    // not JSON: not our gateway
                }
            }
            return new UpgradeAnswer(status, headers, error, message, received);
        } finally {
            plain.close();
        }
    }

    private static int parseLength(String value) {
        try {
            return value == null ? 0 : Math.max(0, Integer.parseInt(value.strip()));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int matched = 0;
        byte[] end = {'\r', '\n', '\r', '\n'};
        while (buf.size() < 16 * 1024) {
            int b = in.read();
            if (b < 0) {
                if (buf.size() == 0) {
                    throw new IOException("connection closed without an answer");
                }
                break;
            }
            buf.write(b);
            matched = b == end[matched] ? matched + 1 : (b == '\r' ? 1 : 0);
            if (matched == 4) {
                break;
            }
        }
        return buf.toString(StandardCharsets.ISO_8859_1);
    }

    private static Socket tls(Socket plain, String host, int port, Path ca) throws IOException {
        try {
            SSLContext context;
            if (ca == null) {
                context = SSLContext.getDefault();
            } else {
                KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
                store.load(null, null);
                try (InputStream in = Files.newInputStream(ca)) {
                    int i = 0;
                    for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                        store.setCertificateEntry("ca" + i++, c);
                    }
                }
                TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(store);
                context = SSLContext.getInstance("TLS");
                context.init(null, tmf.getTrustManagers(), new SecureRandom());
            }
            SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket(plain, host, port, true);
            SSLParameters params = socket.getSSLParameters();
            params.setEndpointIdentificationAlgorithm("HTTPS");
            socket.setSSLParameters(params);
            socket.startHandshake();
            return socket;
        } catch (java.security.GeneralSecurityException e) {
            throw new javax.net.ssl.SSLException("cannot set up TLS: " + e.getClass().getSimpleName());
        }
    }

    // ---- files

    private static boolean shared(Path p) {
        try {
            if (!p.getFileSystem().supportedFileAttributeViews().contains("posix")) {
                return false;
            }
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(p);
            return perms.stream().anyMatch(x -> !x.name().startsWith("OWNER_"));
        } catch (IOException e) {
            return false;
        }
    }

    private static String perms(Path p) {
        try {
            return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
        } catch (IOException | UnsupportedOperationException e) {
            return "";
        }
    }

    /** What a connection token claims (unverified; for advice only): environment, expiry, key id. */
    record TokenView(String env, Instant exp, String kid) {
        static TokenView peek(String jwt) {
            try {
                String[] parts = jwt.split("\\.");
                if (parts.length != 3) {
                    return null;
                }
                JsonNode header = JSON.readTree(Base64.getUrlDecoder().decode(parts[0]));
                JsonNode payload = JSON.readTree(Base64.getUrlDecoder().decode(parts[1]));
                return new TokenView(payload.path("env").asText(null),
                        payload.has("exp") ? Instant.ofEpochSecond(payload.get("exp").asLong()) : null,
                        header.path("kid").asText(null));
            } catch (IOException | RuntimeException e) {
                return null; // never the exception: its message could quote the token
            }
        }
    }
}
