package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.cli.AuditDestination;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.MetricsServer;
import dev.previewtunnel.mux.local.LocalHttpServer;
import dev.previewtunnel.cli.ServiceLifecycle;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.control.ControlServer;
import dev.previewtunnel.ingress.refresh.CommandGrantRefresher;
import dev.previewtunnel.ingress.refresh.GrantRefresher;
import dev.previewtunnel.ingress.refresh.UrlGrantRefresher;
import dev.previewtunnel.ingress.session.AuthorityMap;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.SessionStore;
import dev.previewtunnel.ingress.session.StateFiles;
import dev.previewtunnel.ingress.session.VirtualHostTakenException;
import dev.previewtunnel.ingress.tunnel.EnvironmentGateway;
import dev.previewtunnel.mux.MuxProtocol;
import dev.previewtunnel.mux.audit.AuditLog;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * {@code run}: the desktop proxy, until SIGTERM/SIGINT. Prints the ready line on stdout once listening, then
 * blocks; a JVM shutdown hook closes the ingress (drain by activity), deletes the control file (the sessions'
 * credentials stay, see SessionStore) and releases the waiting thread.
 *
 * <p>Tests run it in-process on a background thread and use {@link #awaitStarted}, {@link #ingress()} and
 * {@link #stop()} instead of a signal.
 */
@Command(name = "run",
        mixinStandardHelpOptions = true,
        versionProvider = IngressVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footer = IngressMain.FOOTER,
        sortOptions = false,
        description = {
                "Run the proxy for browser sessions until SIGTERM or SIGINT.",
                "Listens on LISTEN (loopback only) as an HTTP proxy that requires a session's own credential, and "
                        + "keeps POOL tunnel connections (subprotocol " + MuxProtocol.SUBPROTOCOL + ") to the "
                        + "gateway, which authenticate with the connection token in the Authorization header of "
                        + "the WebSocket upgrade, never in the URL. A request for a granted target becomes a "
                        + "tunnel stream carrying its grant; for a grant to a loopback port P, localhost:P, "
                        + "127.0.0.1:P and [::1]:P all reach it. Anything else gets a readable refusal page.",
                "Secrets: give the token and the grants in files, with --token-file and --grant-file "
                        + "(recommended): values given with --token or --grant are visible to every local user "
                        + "in ps and end up in shell history.",
                "Does not wait for the gateway: while it is unreachable the proxy answers with a 502 page and "
                        + "keeps reconnecting (a warning is logged if the first attempt fails).",
                "Starts with one browser session (--session-id, holding the grants given here). The control API "
                        + "(on by default, loopback only) lets 'session create', 'grant add', 'status' and the other "
                        + "commands add sessions and grants while it runs; its address and token are in the "
                        + "owner-only STATE_DIR/control.json, whose path (never the token) is printed.",
                "Writes each session's proxy credential, {\"username\":...,\"password\":...}, to the owner-only "
                        + "(rw-------) file STATE_DIR/session-ID.credentials.json, and, when listening, prints "
                        + "exactly one JSON line on stdout with the fields event (\"ready\"), proxy (HOST:PORT), "
                        + "credentialsFile, session, gateway, virtualHostSuffix (unless the default), environments "
                        + "(with --environment-gateway: each such environment and its gateway), grants (the granted "
                        + "targets), version, protocol, "
                        + "controlStateFile (unless --no-control) and metrics (with --metrics-listen).",
                "A session may hold grants for several environments: each environment named with "
                        + "--environment-gateway ENV=URL (and its --environment-token-file ENV=FILE) gets a pool of "
                        + "its own, every other environment's streams go to --gateway. Use the virtual hosts "
                        + "NAME.ENV.SUFFIX:PORT (--virtual-host-suffix) for such sessions.",
                "Settings come from the flags, else environment variables (PTUN_INGRESS_ + the option name in "
                        + "upper case with _ for -, e.g. PTUN_INGRESS_GATEWAY, PTUN_INGRESS_TOKEN_FILE), else the "
                        + "JSON config file (--config or PTUN_INGRESS_CONFIG), else the defaults. Tokens and "
                        + "grants themselves are never settings, only the files holding them.",
                "Sessions outlive the process: each keeps its credential (its credentials file, replaced only by "
                        + "'session rotate', deleted by 'session close') and STATE_DIR/sessions.json keeps the "
                        + "sessions, their grants and the proxy port, so after a restart with the same STATE_DIR "
                        + "(and --listen port 0) the proxy listens on the same port if it is free and open browsers "
                        + "keep working.",
                "On SIGTERM/SIGINT: stops accepting browser connections, lets connections that move bytes finish "
                        + "within --drain-timeout and closes those idle for --drain-idle-timeout (502 for new "
                        + "requests meanwhile), deletes the control file, exits 0.",
                "Logs are JSON lines on stderr. Audit events (one JSON object per line) go to stderr, or only to "
                        + "the file given by --audit-file."})
final class RunCommand implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(RunCommand.class);

    @Spec
    CommandSpec spec;

    @Option(names = "--config", paramLabel = "FILE",
            description = "JSON config file: an object whose keys are this command's option names without --, "
                    + "e.g. {\"gateway\": \"ws://127.0.0.1:7443/tunnel\", \"token-file\": \"token\"}; flags and "
                    + "PTUN_INGRESS_* variables override it (default: $PTUN_INGRESS_CONFIG, else none).")
    Path config;

    @Option(names = "--gateway", paramLabel = "URL",
            description = "The gateway's tunnel endpoint: ws://HOST:PORT/PATH or wss://HOST:PORT/PATH, the url in "
                    + "the ready line of 'env-gateway serve'. No query and no user info: the token "
                    + "travels in a header, never in a URL (required; env PTUN_INGRESS_GATEWAY).")
    String gateway;

    @Option(names = "--token-file", paramLabel = "FILE",
            description = "File holding the connection token ('env-gateway token issue'). Recommended form: "
                    + "unlike --token, it keeps the token out of ps. Exactly one of --token-file and --token.")
    Path tokenFile;

    @Option(names = "--token", paramLabel = "TOKEN",
            description = "The connection token itself. Visible to other local users in ps: prefer --token-file.")
    String token;

    @Option(names = "--grant-file", paramLabel = "FILE",
            description = "File of grants ('env-gateway grant issue'), one per line; blank lines and lines "
                    + "starting with # are ignored. Recommended form: keeps grants out of ps. Repeatable.")
    List<Path> grantFiles = new ArrayList<>();

    @Option(names = "--grant", paramLabel = "GRANT",
            description = "A grant for one target. Visible to other local users in ps: prefer --grant-file. "
                    + "Repeatable. With the control API off (--no-control) at least one grant is required; "
                    + "otherwise grants can be added later with 'grant add'.")
    List<String> grants = new ArrayList<>();

    @Option(names = "--listen", paramLabel = "HOST:PORT",
            description = "Where the proxy listens: a loopback address (127.0.0.0/8 or [::1]) only; port 0 picks "
                    + "a free port, reported in the ready line (default: 127.0.0.1:0).")
    String listen;

    @Option(names = "--pool", paramLabel = "N",
            description = "Tunnel connections kept open to the gateway, 1 to 64 (default: 2); at least one per "
                    + "event loop is kept.")
    Integer pool;

    @Option(names = "--gateway-ca", paramLabel = "PEM",
            description = "PEM certificate(s) to trust for a wss:// gateway instead of the JDK's default trust "
                    + "store (default: the JDK's trust store).")
    Path gatewayCa;

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "Directory for the credentials files and control.json; created rwx------ if missing "
                    + "(default: $XDG_STATE_HOME/preview-tunnel when XDG_STATE_HOME is set, else "
                    + "~/.local/state/preview-tunnel).")
    Path stateDir;

    @Option(names = "--session-id", paramLabel = "ID",
            description = "Name of the first browser session: 1 to 64 letters, digits, '.', '_' or '-'; the proxy "
                    + "user is ptun-ID (default: default).")
    String sessionId;

    @Option(names = "--control-listen", paramLabel = "HOST:PORT",
            description = "Where the control API listens: a loopback address only (default: 127.0.0.1:0).")
    String controlListen;

    @Option(names = "--no-control",
            description = "Do not serve the control API (then 'session', 'grant', 'status' cannot reach this "
                    + "ingress); config key \"control\": false, env PTUN_INGRESS_CONTROL=false.")
    Boolean noControl;

    @Option(names = "--metrics-listen", paramLabel = "HOST:PORT",
            description = "Serve Prometheus metrics at http://HOST:PORT/metrics on this loopback address, e.g. "
                    + "127.0.0.1:9465 (default: off).")
    String metricsListen;

    @Option(names = "--drain-timeout", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "On shutdown, the most browser connections in flight may continue while they move "
                    + "bytes; what is still open then is closed (audit drain_cut, reason drain_timeout); 1ms to 1h "
                    + "(default: 30s).")
    Duration drainTimeout;

    @Option(names = "--drain-idle-timeout", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "During that drain, a browser connection that moves no bytes for this long is closed at "
                    + "once (audit drain_cut, reason idle), so idle keep-alives and WebSockets do not hold the "
                    + "stop; 100ms to 1h (default: 2s).")
    Duration drainIdleTimeout;

    @Option(names = "--grant-refresh-command", paramLabel = "PROGRAM",
            description = "When the gateway refuses a stream because its grant expired or was revoked, run this "
                    + "program (no shell) once and use the first line it prints as the new grant. It gets "
                    + "PTUN_SESSION, PTUN_TARGET, PTUN_GRANT_ID and PTUN_REASON in its environment; its stderr is "
                    + "discarded (default: no refresh).")
    String grantRefreshCommand;

    @Option(names = "--grant-refresh-arg", paramLabel = "ARG",
            description = "An argument for --grant-refresh-command; repeatable, passed in order.")
    List<String> grantRefreshArgs = new ArrayList<>();

    @Option(names = "--grant-refresh-url", paramLabel = "URL",
            description = "Instead of a command: POST {\"session\",\"target\",\"grantId\",\"reason\"} to this "
                    + "http(s) URL; the first line of a 200 answer is the new grant (default: no refresh).")
    String grantRefreshUrl;

    @Option(names = "--grant-refresh-token-file", paramLabel = "FILE",
            description = "File holding a bearer token sent to --grant-refresh-url in the Authorization header.")
    Path grantRefreshTokenFile;

    @Option(names = "--grant-refresh-timeout", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "How long the refresh command or URL may take (default: 10s).")
    Duration grantRefreshTimeout;

    @Option(names = "--audit-file", paramLabel = "FILE",
            description = "Append the audit events (one JSON object per line) to this file instead of stderr; "
                    + "created rw-------, an existing one must be owner-only (default: stderr).")
    Path auditFile;

    @ArgGroup(validate = false, heading = "%nLimits and timeouts (each also PTUN_INGRESS_<NAME> and a config-file "
            + "key; see docs/security.md):%n")
    LimitOptions limits = new LimitOptions();

    @ArgGroup(validate = false, heading = "%nSeveral environments and virtual hosts (each also PTUN_INGRESS_<NAME>, "
            + "comma-separated when repeatable, and a config-file key; see docs/desktop-ingress.md):%n")
    EnvironmentOptions environments = new EnvironmentOptions();

    private final Object lock = new Object();
    private Ingress ingress; // guarded by lock
    private ControlServer control; // guarded by lock
    private MetricsServer metrics; // guarded by lock
    private ExecutorService refreshExecutor; // guarded by lock
    private Duration drain = Duration.ofSeconds(30); // guarded by lock
    private Duration drainIdle = Ingress.DEFAULT_DRAIN_IDLE; // guarded by lock
    private boolean stopRequested; // guarded by lock
    private final ServiceLifecycle lifecycle = new ServiceLifecycle();

    private AuditDestination audit; // set once, by run()

    @Override
    public Integer call() {
        try {
            return lifecycle.call(this::run);
        } finally {
            if (audit != null) {
                audit.close();
            }
        }
    }

    private int run() {
        // 1. Settings (flags > PTUN_INGRESS_* > config file > defaults), before reading secrets or the network.
        Settings s = Settings.load(spec, config, IngressCli.ENV_PREFIX, IngressCli.CONFIG_KEYS);
        String gatewayText = s.require("gateway", "URL", s.string("gateway", gateway, null));
        URI gatewayUri = IngressCli.parseGateway(spec, s.name("gateway"), gatewayText);
        String suffix = environments.suffix(s);
        Path ca = s.path("gateway-ca", gatewayCa, null);
        String session = s.string("session-id", sessionId, "default");
        if (!session.matches(IngressCli.SESSION_ID)) {
            throw s.invalid("session-id", IngressCli.SESSION_ID_RULE + ", got '" + Cli.shown(session) + "'");
        }
        int poolSize = s.integer("pool", pool, 2);
        if (poolSize < 1 || poolSize > 64) {
            throw s.invalid("pool", "must be 1 to 64, got " + poolSize);
        }
        String listenText = s.string("listen", listen, "127.0.0.1:0");
        InetSocketAddress listenAddress = Cli.parseListen(spec, s.name("listen"), listenText, 0);
        if (!listenAddress.getAddress().isLoopbackAddress()) {
            throw s.invalid("listen", "must be a loopback address (127.0.0.0/8 or [::1]), got '"
                    + Cli.shown(listenText) + "': whoever can reach the proxy can use this desktop user's access to "
                    + "the environment, so it must not be reachable from other machines");
        }
        boolean controlOn = s.bool("control", noControl == null ? null : !noControl, true);
        InetSocketAddress controlAddress = controlOn
                ? s.loopbackListen(spec, "control-listen", s.string("control-listen", controlListen, "127.0.0.1:0"), 0)
                : null;
        String metricsText = s.string("metrics-listen", metricsListen, null);
        InetSocketAddress metricsAddress = metricsText == null ? null
                : s.loopbackListen(spec, "metrics-listen", metricsText, 9465);
        Duration drainFor = s.inRange("drain-timeout", s.duration("drain-timeout", drainTimeout, Duration.ofSeconds(30)),
                Duration.ofMillis(1), Duration.ofHours(1));
        Duration idleFor = s.inRange("drain-idle-timeout", s.duration("drain-idle-timeout", drainIdleTimeout,
                Ingress.DEFAULT_DRAIN_IDLE), Duration.ofMillis(100), Duration.ofHours(1));
        Path tokenPath = s.path("token-file", tokenFile, null);
        List<Path> grantPaths = s.paths("grant-file", grantFiles);
        Path dir = s.path("state-dir", stateDir, IngressCli.defaultStateDir()).toAbsolutePath().normalize();
        IngressConfig ingressConfig = limits.applyTo(
                IngressConfig.defaults(listenAddress, gatewayUri).withPoolSize(poolSize), s);
        LocalHttpServer.Limits localLimits = limits.localLimits(s);
        audit = AuditDestination.apply(s, AuditLog.LOGGER, s.path(AuditDestination.KEY, auditFile, null));

        // 2. Secrets, TLS, refresh hook. Nothing here may echo a token or a grant.
        String tokenValue = readToken(tokenPath);
        Map<String, EnvironmentGateway> ownGateways = environments.gateways(spec, s);
        boolean tls = "wss".equals(gatewayUri.getScheme())
                || ownGateways.values().stream().anyMatch(g -> "wss".equals(g.url().getScheme()));
        if (ca != null && !tls) {
            throw Cli.usage(spec, "--gateway-ca applies to wss:// gateways only");
        }
        SslContext ssl = tls ? IngressCli.clientTls(spec, ca) : null;
        GrantRefresher refresher = refresher(s);
        IngressCli.prepareStateDir(dir);
        Path credentials = StateFiles.credentialsFile(dir, session);
        // Sessions outlive the process: the first one keeps its credential, the saved ones come back, and the
        // proxy listens on the port of the previous run when it may choose, so open browsers keep working.
        SessionStore store = new SessionStore(dir);
        SessionStore.Snapshot saved = store.load();
        // The first session's grants come from the flags when any are given (a grant dropped from the grant file
        // stays dropped); only without them are its saved grants (from 'grant add') attached again.
        BrowserSession first = store.restoreOrCreate(session, suffix);
        boolean flagGrants = !grants.isEmpty() || !grantPaths.isEmpty();
        saved.sessions().stream().filter(x -> x.id().equals(session)).findFirst()
                .ifPresent(x -> SessionStore.reattach(first.egress(x.egress()), flagGrants ? List.of() : x.grants()));
        Set<String> targets = attachGrants(first, grantPaths, controlOn);
        first.authorities().entries().forEach(e -> targets.add(e.target().toString()));
        listenAddress = SessionStore.preferredListen(listenAddress, saved.proxyPort());
        ingressConfig = ingressConfig.withListen(listenAddress);
        String gatewayPath = gatewayUri.getRawPath();
        if (gatewayPath == null || gatewayPath.isEmpty() || gatewayPath.equals("/")) {
            log.warn("--gateway has no path; env-gateway serves its tunnel at {} unless started with --path",
                    MuxProtocol.DEFAULT_PATH);
        }

        // 3. Start, write the credential, start the control API and metrics, announce, wait.
        ServiceLifecycle.logLimits(log, LimitOptions.describe(ingressConfig, localLimits));
        PrometheusMeterRegistry registry = metricsAddress == null ? null : MetricsServer.newRegistry();
        Ingress running = start(ingressConfig, tokenValue, ssl, listenAddress, registry, ownGateways);
        running.virtualHostSuffix(suffix);
        running.sessions().add(first);
        running.grantRefresher(refresher);
        ControlServer controlServer = null;
        MetricsServer metricsServer = null;
        try {
            writeCredentials(credentials, first); // the same credential again when restored: rewritten atomically
            for (SessionStore.Saved other : saved.sessions()) {
                if (!other.id().equals(session)) {
                    BrowserSession back = store.restoreOrCreate(other.id(), suffix).egress(other.egress());
                    SessionStore.reattach(back, other.grants());
                    writeCredentials(StateFiles.credentialsFile(dir, back.id()), back);
                    running.sessions().add(back);
                }
            }
            store.saveQuietly(running.proxyAddress(), running.sessions().all());
            if (controlAddress != null) {
                controlServer = startControl(running, dir, controlAddress, localLimits);
            }
            if (metricsAddress != null) {
                metricsServer = MetricsServer.startForCommand(metricsAddress, registry, localLimits);
            }
        } catch (RuntimeException e) {
            if (controlServer != null) {
                controlServer.close();
            }
            running.close();
            shutdownQuietly(refresher);
            throw e;
        }
        boolean closeNow;
        synchronized (lock) {
            ingress = running;
            control = controlServer;
            metrics = metricsServer;
            drain = drainFor;
            drainIdle = idleFor;
            closeNow = stopRequested;
        }
        if (closeNow) { // stop() came while starting
            shutdown("stop requested during start");
            return ExitCodes.OK;
        }
        Thread hook = ServiceLifecycle.addShutdownHook(this::onSignal, "ptun-ingress-shutdown");
        try {
            watchFirstConnection(running.firstConnection(), gatewayUri.getHost() + ":" + gatewayUri.getPort());
            running.pools().firstConnections().forEach((environment, f) -> watchFirstConnection(f,
                    ownGateways.get(environment).shown() + " (environment " + environment + ")"));
            String proxy = Cli.hostPort(running.proxyAddress());
            ObjectNode ready = Cli.json()
                    .put("event", "ready")
                    .put("proxy", proxy)
                    .put("credentialsFile", credentials.toAbsolutePath().toString())
                    .put("session", first.id())
                    .put("gateway", gatewayUri.toString());
            // Only when set: a single-environment ingress prints the very line it always did.
            if (!suffix.equals(AuthorityMap.DEFAULT_SUFFIX)) {
                ready.put("virtualHostSuffix", suffix);
            }
            if (!ownGateways.isEmpty()) {
                ObjectNode own = ready.putObject("environments");
                ownGateways.forEach((environment, g) -> own.put(environment, g.shown()));
            }
            ArrayNode list = ready.putArray("grants");
            targets.forEach(list::add);
            ready.put("version", IngressVersionProvider.projectVersion())
                    .put("protocol", MuxProtocol.SUBPROTOCOL);
            if (controlServer != null) {
                ready.put("controlStateFile", controlServer.stateFile().toAbsolutePath().toString());
            }
            if (metricsServer != null) {
                ready.put("metrics", metricsServer.url());
            }
            Cli.printJson(ready);
            String url = targets.isEmpty() ? "localhost:5173" : targets.iterator().next();
            log.atInfo()
                    .setMessage("proxy ready; start a browser profile of its own with: chromium "
                            + "--proxy-server=http://{} --proxy-bypass-list='<-loopback>' "
                            + "--user-data-dir=$(mktemp -d) http://{}/ and give the proxy username and password "
                            + "from {} when asked (Playwright: proxy server "
                            + "http://{} with the same username and password)")
                    .addArgument(proxy).addArgument(url).addArgument(credentials.toAbsolutePath())
                    .addArgument(proxy)
                    .addKeyValue("event", "ready")
                    .log();
            if (targets.isEmpty()) {
                log.info("session {} has no grants yet: attach one with: desktop-ingress grant add --session {} "
                        + "--grant-file FILE{}", first.id(), first.id(),
                        dir.equals(IngressCli.defaultStateDir().toAbsolutePath().normalize()) ? ""
                                : " --state-dir " + dir);
            }
            lifecycle.markStarted();
            lifecycle.awaitStopped();
        } finally {
            stop(); // no-op when already stopped; closes the ingress if printing or waiting failed
            ServiceLifecycle.removeShutdownHook(hook);
        }
        return ExitCodes.OK;
    }

    private String readToken(Path tokenPath) {
        if (token != null && tokenPath != null) {
            throw Cli.usage(spec, "give either --token-file or --token, not both");
        }
        if (token == null && tokenPath == null) {
            throw Cli.usage(spec, "a connection token is required: --token-file FILE (recommended; "
                    + "'env-gateway token issue' prints one; or PTUN_INGRESS_TOKEN_FILE) or --token TOKEN");
        }
        if (tokenPath != null) {
            return IngressCli.tokenFromFile(spec, tokenPath, "--token-file", "--token-file " + tokenPath);
        }
        return IngressCli.requireToken(spec, token.strip(), "--token");
    }

    /** Adds every grant to the session; returns the granted targets in order ("localhost:5173"). */
    private Set<String> attachGrants(BrowserSession session, List<Path> grantPaths, boolean controlOn) {
        Set<String> targets = new LinkedHashSet<>();
        int count = 0;
        for (int i = 0; i < grants.size(); i++) {
            attach(session, grants.get(i).strip(), "--grant #" + (i + 1), targets);
            count++;
        }
        for (Path file : grantPaths) {
            List<String> lines = IngressCli.readSecretLines(spec, file, "--grant-file");
            for (int i = 0; i < lines.size(); i++) {
                attach(session, lines.get(i), "line " + (i + 1) + " of --grant-file " + file, targets);
                count++;
            }
        }
        if (count == 0 && !controlOn) {
            throw Cli.usage(spec, "at least one grant is required with --no-control: --grant-file FILE "
                    + "(recommended) or --grant GRANT; 'env-gateway grant issue' issues them");
        }
        return targets;
    }

    private void attach(BrowserSession session, String grant, String where, Set<String> targets) {
        String target;
        try {
            target = session.authorities().add(grant).target().toString();
        } catch (IllegalArgumentException e) {
            throw Cli.usage(spec, where + " is not a readable grant (expected a JWT from 'env-gateway grant "
                    + "issue'); the value is not shown");
        } catch (VirtualHostTakenException e) {
            throw Cli.usage(spec, where + ": " + e.getMessage() + " (with 'grant add --name')");
        }
        targets.add(target);
        UnverifiedGrantView view = UnverifiedGrantView.decode(grant);
        if (view.expiresAt().isBefore(Instant.now())) {
            log.warn("{}: grant {} for {} expired at {}; the gateway will refuse it, issue a new one", where,
                    view.jti(), target, view.expiresAt());
        }
    }

    /** The grant refresh hook from the settings, or null; a command gets its own small thread pool. */
    private GrantRefresher refresher(Settings s) {
        String command = s.string("grant-refresh-command", grantRefreshCommand, null);
        List<String> args = s.list("grant-refresh-arg", grantRefreshArgs, Settings::text);
        String url = s.string("grant-refresh-url", grantRefreshUrl, null);
        Path bearerFile = s.path("grant-refresh-token-file", grantRefreshTokenFile, null);
        Duration timeout = Cli.requireRange(spec, s.duration("grant-refresh-timeout", grantRefreshTimeout,
                Duration.ofSeconds(10)), s.name("grant-refresh-timeout"), Duration.ofMillis(100), Duration.ofMinutes(5));
        if (command != null && url != null) {
            throw Cli.usage(spec, "give either --grant-refresh-command or --grant-refresh-url, not both");
        }
        if (!args.isEmpty() && command == null) {
            throw Cli.usage(spec, "--grant-refresh-arg needs --grant-refresh-command");
        }
        if (bearerFile != null && url == null) {
            throw Cli.usage(spec, "--grant-refresh-token-file needs --grant-refresh-url");
        }
        if (command != null) {
            if (command.contains("/")) {
                Path program = Path.of(command);
                if (!Files.isRegularFile(program) || !Files.isExecutable(program)) {
                    throw s.invalid("grant-refresh-command", "must name an executable file (or a program on the "
                            + "PATH), got '" + Cli.shown(command) + "'");
                }
            }
            List<String> argv = new ArrayList<>();
            argv.add(command);
            argv.addAll(args);
            ExecutorService executor = Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "ptun-grant-refresh");
                t.setDaemon(true);
                return t;
            });
            synchronized (lock) {
                refreshExecutor = executor;
            }
            return new CommandGrantRefresher(argv, timeout, executor);
        }
        if (url != null) {
            URI uri;
            try {
                uri = new URI(url);
            } catch (URISyntaxException e) {
                throw s.invalid("grant-refresh-url", "is not a valid URL");
            }
            if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null
                    || uri.getRawQuery() != null || uri.getRawUserInfo() != null) {
                throw s.invalid("grant-refresh-url", "must be an http:// or https:// URL without query or user info "
                        + "(a bearer token goes in --grant-refresh-token-file)");
            }
            String bearer = null;
            if (bearerFile != null) {
                List<String> lines = IngressCli.readSecretLines(spec, bearerFile, "--grant-refresh-token-file");
                if (lines.size() != 1) {
                    throw Cli.usage(spec, "--grant-refresh-token-file must hold the token on one line");
                }
                bearer = lines.get(0);
            }
            return new UrlGrantRefresher(uri, bearer, timeout);
        }
        return null;
    }

    private static void writeCredentials(Path file, BrowserSession session) {
        try {
            Path written = StateFiles.writeCredentials(file.getParent(), session);
            if (!written.equals(file)) {
                throw new IllegalStateException("credentials written to " + written + ", expected " + file);
            }
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied writing credentials file " + file);
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot write credentials file " + file + " ("
                    + e.getClass().getSimpleName() + ")");
        }
    }

    private Ingress start(IngressConfig ingressConfig, String tokenValue, SslContext ssl,
                          InetSocketAddress listenAddress, PrometheusMeterRegistry registry,
                          Map<String, EnvironmentGateway> ownGateways) {
        try {
            return Ingress.start(ingressConfig, () -> tokenValue, ssl, registry, ownGateways);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException(ExitCodes.INTERNAL, "interrupted while starting");
        } catch (Exception e) {
            throw ServiceLifecycle.bindFailure(e, "", listenAddress);
        }
    }

    private static ControlServer startControl(Ingress running, Path dir, InetSocketAddress address,
                                              LocalHttpServer.Limits localLimits) {
        try {
            return ControlServer.start(running, dir, address, localLimits);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException(ExitCodes.INTERNAL, "interrupted while starting");
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied writing " + dir.resolve(
                    ControlServer.STATE_FILE));
        } catch (Exception e) {
            throw ServiceLifecycle.bindFailure(e, " (--control-listen)", address);
        }
    }

    /** Ingress.start does not wait for the gateways; say so when a pool's first attempt fails. */
    private void watchFirstConnection(Future<Void> first, String gatewayShown) {
        if (first == null) {
            return;
        }
        first.addListener(f -> {
            if (f.isSuccess() || isStopRequested()) {
                return;
            }
            Throwable cause = f.cause();
            log.atWarn()
                    .setMessage("first connection to the gateway {} failed: {}; the proxy is up, answers with a 502 "
                            + "page meanwhile and keeps retrying")
                    .addArgument(gatewayShown)
                    .addArgument(cause == null || cause.getMessage() == null ? String.valueOf(cause)
                            : cause.getMessage())
                    .addKeyValue("event", "gateway_unreachable")
                    .log();
        });
    }

    private boolean isStopRequested() {
        synchronized (lock) {
            return stopRequested;
        }
    }

    /** Shutdown hook: clean stop; when run as the main program, exit 0 rather than the signal's 128+n. */
    private void onSignal() {
        ServiceLifecycle.onSignal(log, () -> stop("signal"), IngressMain.standalone);
    }

    /**
     * Stops the ingress, deletes the control file and releases the thread blocked in
     * {@link #call()}. Idempotent and thread-safe; returns once stopped. Used by the shutdown hook and by tests.
     */
    void stop() {
        stop("stop");
    }

    private void stop(String reason) {
        boolean first;
        synchronized (lock) {
            first = !stopRequested;
            stopRequested = true;
        }
        if (first) {
            shutdown(reason);
        }
        lifecycle.awaitStoppedUninterruptibly();
    }

    private void shutdown(String reason) {
        Ingress running;
        ControlServer controlServer;
        MetricsServer metricsServer;
        ExecutorService executor;
        Duration drainFor;
        Duration idleFor;
        synchronized (lock) {
            running = ingress;
            controlServer = control;
            metricsServer = metrics;
            executor = refreshExecutor;
            drainFor = drain;
            idleFor = drainIdle;
        }
        if (running == null) {
            return; // stopped before started: run() sees stopRequested and shuts down what it started
        }
        long t0 = System.nanoTime();
        try {
            // The control API first: nothing should pick it up for a proxy that is going away. The credentials
            // files stay: a session's credential outlives the process (SessionStore), so browsers keep working
            // after a restart; 'session close' deletes one, 'session rotate' replaces one.
            if (controlServer != null) {
                controlServer.close();
            }
            // The metrics listener goes before the drain too (the proxy listener goes first thing in close), so a
            // replacement started on the same addresses can bind them while this one drains.
            if (metricsServer != null) {
                metricsServer.close();
            }
            running.close(drainFor, idleFor);
            if (executor != null) {
                executor.shutdownNow();
            }
        } finally {
            log.atInfo().setMessage("ingress stopped")
                    .addKeyValue("event", "stopped")
                    .addKeyValue("reason", reason)
                    .addKeyValue("millis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0))
                    .log();
            lifecycle.markStopped();
        }
    }

    private void shutdownQuietly(GrantRefresher refresher) {
        ExecutorService executor;
        synchronized (lock) {
            executor = refreshExecutor;
        }
        if (refresher != null && executor != null) {
            executor.shutdownNow();
        }
    }

    /** Waits until the ingress is ready or {@link #call()} has ended (failed); true if that happened in time. */
    boolean awaitStarted(long timeout, TimeUnit unit) throws InterruptedException {
        return lifecycle.awaitStarted(timeout, unit);
    }

    /** The running ingress, or null before start / after a failed start. */
    Ingress ingress() {
        synchronized (lock) {
            return ingress;
        }
    }
}
