package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.cli.AuditDestination;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ConsoleLogging;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.LogOptions;
import dev.previewtunnel.local.http.MetricsServer;
import dev.previewtunnel.local.metrics.BuildInfo;
import dev.previewtunnel.local.http.LocalHttpServer;
import dev.previewtunnel.cli.ServiceRunner;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.cli.SettingsProvider;
import dev.previewtunnel.cli.StateDirectory;
import dev.previewtunnel.cli.StateLock;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.control.ControlServer;
import dev.previewtunnel.ingress.refresh.GrantRefresher;
import dev.previewtunnel.ingress.session.AuthorityMap;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.SessionStore;
import dev.previewtunnel.ingress.session.StateFiles;
import dev.previewtunnel.ingress.tunnel.EnvironmentGateway;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.wire.MuxProtocol;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.AccessDeniedException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

import static java.util.Objects.requireNonNullElse;

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
        defaultValueProvider = IngressSettingsProvider.class,
        versionProvider = IngressVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  desktop-ingress run --gateway ws://127.0.0.1:7443/tunnel \\",
                "      --token-file ~/ptun-token --grant-file ~/ptun-grant",
                "  desktop-ingress run --gateway wss://env.example.com/tunnel \\",
                "      --gateway-ca ca.pem --token-file ~/ptun-token \\",
                "      --metrics-listen 127.0.0.1:9465"},
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
                "Logs go to stderr, as text lines on a terminal and JSON lines otherwise (--log-format). Audit "
                        + "events (one JSON object per line) go to STATE_DIR/audit.jsonl, or to the file given by "
                        + "--audit-file, or to stderr with --audit-file -; the log says where at startup."})
final class RunCommand implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(RunCommand.class);
    /**
     * Keys of the ingress's JSON config file, derived from this command's options ({@code control} is the opposite
     * of --no-control). Every command that takes --config accepts the same file and reads what it needs. Tokens
     * and grants are never settings: only the files holding them are.
     */
    static final Set<String> CONFIG_KEYS = SettingsProvider.keysOf(new RunCommand(), IngressSettingsProvider.NOT_SETTINGS);

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

    @Mixin
    TokenAndGrantOptions secrets = new TokenAndGrantOptions();

    @Option(names = "--listen", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:0",
            description = "Where the proxy listens: a loopback address (127.0.0.0/8 or [::1]) only; port 0 picks "
                    + "a free port, reported in the ready line (default: 127.0.0.1:0).")
    String listen;

    @Mixin
    PoolOptions poolOptions = new PoolOptions();

    @Option(names = "--gateway-ca", paramLabel = "PEM",
            description = "PEM certificate(s) to trust for a wss:// gateway instead of the JDK's default trust "
                    + "store (default: the JDK's trust store).")
    Path gatewayCa;

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "Directory for the credentials files and control.json; created rwx------ if missing "
                    + "(default: $XDG_STATE_HOME/preview-tunnel when XDG_STATE_HOME is set, else "
                    + "~/.local/state/preview-tunnel). One run per directory: a second one refuses (exit 3, "
                    + "run.lock).")
    Path stateDir;

    @Option(names = "--session-id", paramLabel = "ID", defaultValue = "default",
            description = "Name of the first browser session: 1 to 64 letters, digits, '.', '_' or '-'; the proxy "
                    + "user is ptun-ID (default: default).")
    String sessionId;

    @Option(names = "--control-listen", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:0",
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
            defaultValue = "30s",
            description = "On shutdown, the most browser connections in flight may continue while they move "
                    + "bytes; what is still open then is closed (audit drain_cut, reason drain_timeout); 1ms to 1h "
                    + "(default: 30s).")
    Duration drainTimeout;

    @Option(names = "--drain-idle-timeout", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "During that drain, a browser connection that moves no bytes for this long is closed at "
                    + "once (audit drain_cut, reason idle), so idle keep-alives and WebSockets do not hold the "
                    + "stop; 100ms to 1h (default: 2s).")
    Duration drainIdleTimeout;

    @Mixin
    GrantRefreshOptions grantRefresh = new GrantRefreshOptions();

    @Option(names = "--audit-file", paramLabel = "FILE",
            description = "Append the audit events (one JSON object per line) to this file, or write them to "
                    + "stderr with -; created rw-------, an existing one must be owner-only (default: "
                    + "STATE_DIR/audit.jsonl, rotated at 10 MiB keeping 5).")
    String auditFile;

    @Mixin
    LogOptions logOptions = new LogOptions();

    @ArgGroup(validate = false, heading = "%nLimits and timeouts (each also PTUN_INGRESS_<NAME> and a config-file "
            + "key; see docs/security.md):%n")
    LimitOptions limits = new LimitOptions();

    @ArgGroup(validate = false, heading = "%nSeveral environments and virtual hosts (each also PTUN_INGRESS_<NAME>, "
            + "comma-separated when repeatable, and a config-file key; see docs/desktop-ingress.md):%n")
    EnvironmentOptions environments = new EnvironmentOptions();

    private final ServiceRunner runner = new ServiceRunner(log, "ingress", () -> IngressMain.standalone);
    private volatile Ingress ingress; // set once started, for tests
    private ConsoleLogging logging; // set by call() before run()

    @Override
    public Integer call() {
        // Closed after the runner's last line ("ingress stopped"), so that line is in the chosen format too.
        try (ConsoleLogging applied = logOptions.apply()) {
            logging = applied;
            return runner.call(this::run);
        }
    }

    private int run() {
        // 1. Settings (flags > PTUN_INGRESS_* > config file > defaults: picocli fills the options through the
        //    settings provider; s names where each value came from), before reading secrets or the network.
        Settings s = SettingsProvider.settings(spec, config, IngressCli.ENV_PREFIX, CONFIG_KEYS);
        String gatewayText = s.require("gateway", "URL", gateway);
        URI gatewayUri = IngressCli.parseGateway(spec, s.name("gateway"), gatewayText);
        String suffix = environments.suffix(s);
        Path ca = gatewayCa;
        String session = sessionId;
        if (!session.matches(IngressCli.SESSION_ID)) {
            throw s.invalid("session-id", IngressCli.SESSION_ID_RULE + ", got '" + Cli.shown(session) + "'");
        }
        String listenText = listen;
        InetSocketAddress listenAddress = Cli.parseListen(spec, s.name("listen"), listenText, 0);
        if (!listenAddress.getAddress().isLoopbackAddress()) {
            throw s.invalid("listen", "must be a loopback address (127.0.0.0/8 or [::1]), got '"
                    + Cli.shown(listenText) + "': whoever can reach the proxy can use this desktop user's access to "
                    + "the environment, so it must not be reachable from other machines");
        }
        boolean controlOn = noControl == null || !noControl;
        InetSocketAddress controlAddress = controlOn
                ? s.loopbackListen(spec, "control-listen", controlListen, 0)
                : null;
        String metricsText = metricsListen;
        InetSocketAddress metricsAddress = metricsText == null ? null
                : s.loopbackListen(spec, "metrics-listen", metricsText, 9465);
        Duration drainFor = s.inRange("drain-timeout", drainTimeout, Duration.ofMillis(1), Duration.ofHours(1));
        Duration idleFor = s.inRange("drain-idle-timeout", requireNonNullElse(drainIdleTimeout,
                Ingress.DEFAULT_DRAIN_IDLE), Duration.ofMillis(100), Duration.ofHours(1));
        Path tokenPath = secrets.tokenFile();
        List<Path> grantPaths = secrets.grantFiles(s);
        Path dir = (stateDir != null ? stateDir : IngressCli.defaultStateDir()).toAbsolutePath().normalize();
        IngressConfig ingressConfig = limits.applyTo(
                poolOptions.applyTo(IngressConfig.defaults(listenAddress, gatewayUri), s), s);
        LocalHttpServer.Limits localLimits = limits.localLimits(s);
        // One run per state directory, before anything in it is read or written (the control file, credentials).
        StateDirectory.prepare(dir, "the credentials file");
        runner.open(StateLock.acquire(dir, "desktop-ingress run", "give this one another --state-dir"));
        runner.open(AuditDestination.apply(s, AuditLog.LOGGER, auditFile, dir));

        // 2. Secrets, TLS, refresh hook. Nothing here may echo a token or a grant.
        String tokenValue = secrets.readToken(spec, tokenPath);
        Map<String, EnvironmentGateway> ownGateways = environments.gateways(spec, s);
        boolean tls = "wss".equals(gatewayUri.getScheme())
                || ownGateways.values().stream().anyMatch(g -> "wss".equals(g.url().getScheme()));
        if (ca != null && !tls) {
            throw Cli.usage(spec, "--gateway-ca applies to wss:// gateways only");
        }
        SslContext ssl = tls ? IngressCli.clientTls(spec, ca) : null;
        GrantRefresher refresher = grantRefresh.refresher(spec, s, runner);
        Path credentials = StateFiles.credentialsFile(dir, session);
        // Sessions outlive the process: the first one keeps its credential, the saved ones come back, and the
        // proxy listens on the port of the previous run when it may choose, so open browsers keep working.
        SessionStore store = new SessionStore(dir);
        SessionStore.Snapshot saved = store.load();
        // The first session's grants come from the flags when any are given (a grant dropped from the grant file
        // stays dropped); only without them are its saved grants (from 'grant add') attached again.
        BrowserSession first = store.restoreOrCreate(session, suffix);
        boolean flagGrants = secrets.grantsGiven(grantPaths);
        saved.sessions().stream().filter(x -> x.id().equals(session)).findFirst()
                .ifPresent(x -> SessionStore.reattach(first.egress(x.egress()), flagGrants ? List.of() : x.grants()));
        Set<String> targets = secrets.attachGrants(spec, first, grantPaths, controlOn);
        first.authorities().entries().forEach(e -> targets.add(e.target().toString()));
        listenAddress = SessionStore.preferredListen(listenAddress, saved.proxyPort());
        ingressConfig = ingressConfig.withListen(listenAddress);
        String gatewayPath = gatewayUri.getRawPath();
        if (gatewayPath == null || gatewayPath.isEmpty() || gatewayPath.equals("/")) {
            log.warn("--gateway has no path; env-gateway serves its tunnel at {} unless started with --path",
                    MuxProtocol.DEFAULT_PATH);
        }

        // 3. Start, write the credential, start the metrics and control API, announce, wait. Stopped in reverse:
        // the control API first (nothing should pick it up for a proxy that is going away), then the metrics
        // listener (so a replacement on the same addresses can bind them while this one drains), then the drain.
        Map<String, String> inEffect = LimitOptions.describe(ingressConfig, localLimits);
        PoolOptions.describe(ingressConfig, inEffect);
        ServiceRunner.logLimits(log, inEffect);
        PrometheusMeterRegistry registry = metricsAddress == null ? null : MetricsServer.newRegistry();
        if (registry != null) {
            BuildInfo.register(registry, "ptun.ingress", IngressVersionProvider.projectVersion(),
                    IngressVersionProvider.commit(), MuxProtocol.SUBPROTOCOL);
        }
        IngressConfig startWith = ingressConfig;
        Ingress running = ServiceRunner.listen(() -> Ingress.start(startWith, () -> tokenValue, ssl, registry,
                ownGateways), "", listenAddress);
        runner.open(() -> running.close(drainFor, idleFor));
        running.virtualHostSuffix(suffix);
        running.sessions().add(first);
        running.grantRefresher(refresher);
        // The credentials files stay at stop: a session's credential outlives the process (SessionStore), so
        // browsers keep working after a restart; 'session close' deletes one, 'session rotate' replaces one.
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
        MetricsServer metricsServer = metricsAddress == null ? null
                : runner.open(Cli.startMetrics(metricsAddress, registry, localLimits));
        ControlServer controlServer = controlAddress == null ? null
                : runner.open(startControl(running, dir, controlAddress, localLimits));
        ingress = running;
        runner.serve("ptun-ingress-shutdown", () -> {
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
            BrowserHint.logReady(log, logging, proxy, "http://" + url + "/", credentials);
            if (targets.isEmpty()) {
                log.info("session {} has no grants yet: attach one with: desktop-ingress grant add --session {} "
                        + "--grant-file FILE{}", first.id(), first.id(),
                        dir.equals(IngressCli.defaultStateDir().toAbsolutePath().normalize()) ? ""
                                : " --state-dir " + dir);
            }
        });
        return ExitCodes.OK;
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

    /** Starts the control API; its state file cannot be written: exit 3. */
    private static ControlServer startControl(Ingress running, Path dir, InetSocketAddress address,
                                              LocalHttpServer.Limits localLimits) {
        return ServiceRunner.listen(() -> {
            try {
                return ControlServer.start(running, dir, address, localLimits);
            } catch (AccessDeniedException e) {
                throw new CliException(ExitCodes.REFUSED, "permission denied writing " + dir.resolve(
                        ControlServer.STATE_FILE));
            }
        }, " (--control-listen)", address);
    }

    /** Ingress.start does not wait for the gateways; say so when a pool's first attempt fails. */
    private void watchFirstConnection(Future<Void> first, String gatewayShown) {
        if (first == null) {
            return;
        }
        first.addListener(f -> {
            if (f.isSuccess() || runner.stopping()) {
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

    /**
     * Stops the ingress (drain by activity), closes the control API (deleting its file) and releases the thread
     * blocked in {@link #call()}. Idempotent and thread-safe; returns once stopped. Used by tests.
     */
    void stop() {
        runner.stop();
    }

    /** Waits until the ingress is ready or {@link #call()} has ended (failed); true if that happened in time. */
    boolean awaitStarted(long timeout, TimeUnit unit) throws InterruptedException {
        return runner.awaitStarted(timeout, unit);
    }

    /** The running ingress, or null before start / after a failed start. */
    Ingress ingress() {
        return ingress;
    }
}
