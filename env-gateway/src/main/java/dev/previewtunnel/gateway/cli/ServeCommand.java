package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.gateway.GatewayAuditEvent;
import dev.previewtunnel.cli.AuditDestination;
import dev.previewtunnel.cli.ConsoleLogging;
import dev.previewtunnel.cli.LogOptions;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.local.http.MetricsServer;
import dev.previewtunnel.local.metrics.BuildInfo;
import dev.previewtunnel.cli.StateDirectory;
import dev.previewtunnel.cli.StateLock;
import dev.previewtunnel.local.http.LocalHttpServer;
import dev.previewtunnel.cli.ServiceRunner;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.cli.SettingsProvider;
import dev.previewtunnel.cli.UnixSocketFile;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.gateway.revocation.RevocationStore;
import dev.previewtunnel.gateway.admin.AdminServer;
import dev.previewtunnel.gateway.control.StdioControlChannel;
import dev.previewtunnel.gateway.policy.Cidr;
import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.ReloadingVerificationKeys;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.local.files.OwnerOnlyFiles;
import dev.previewtunnel.local.net.UnixSocketPath;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.handler.ssl.SslContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static java.util.Objects.requireNonNullElse;

/**
 * {@code serve}: runs the gateway until SIGTERM/SIGINT. Prints the ready line on stdout once bound, then blocks;
 * a JVM shutdown hook closes the server gracefully (GOAWAY, drain) and releases the waiting thread.
 *
 * <p>Tests run it in-process on a background thread and use {@link #awaitStarted}, {@link #server()} and
 * {@link #stop()} instead of a signal.
 */
@Command(name = "serve",
        mixinStandardHelpOptions = true,
        defaultValueProvider = GatewaySettingsProvider.class,
        versionProvider = GatewayVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  env-gateway serve --keys ~/.ptun-keys --env dev1 --listen 127.0.0.1:7443 \\",
                "      --admin-listen 127.0.0.1:7444",
                "  env-gateway serve --keys ~/.ptun-keys --env dev1 --listen 0.0.0.0:7443 \\",
                "      --tls-cert cert.pem --tls-key key.pem"},
        sortOptions = false,
        description = {
                "Run the tunnel endpoint of one environment until SIGTERM or SIGINT.",
                "Serves a WebSocket endpoint (subprotocol " + MuxProtocol.SUBPROTOCOL + ") at LISTEN and PATH, "
                        + "over TLS (wss) when --tls-cert and --tls-key are given. Each connection must present "
                        + "a connection token for ENV in its Authorization header (never in the URL); each stream must carry its own "
                        + "grant, which names the only target it may reach. Targets must be loopback addresses "
                        + "unless --allow-target adds networks.",
                "When listening, prints exactly one JSON line on stdout with the fields event (\"ready\"), "
                        + "listen (HOST:PORT actually bound, or unix:PATH), url (the ws or wss URL to dial; on a "
                        + "Unix socket path instead, the HTTP path), env, protocol ("
                        + MuxProtocol.SUBPROTOCOL + "), transport (epoll or nio) and version; with --admin-listen "
                        + "also admin (its URL) and adminTokenFile; with --metrics-listen also metrics (the "
                        + "scrape URL).",
                "Settings come from the flags, else environment variables (PTUN_GATEWAY_ + the option name in "
                        + "upper case with _ for -, e.g. PTUN_GATEWAY_LISTEN), else the JSON config file "
                        + "(--config or PTUN_GATEWAY_CONFIG; keys are the option names without --), else the "
                        + "defaults. An invalid value stops the start with its key and the reason (exit 1).",
                "On SIGTERM/SIGINT: releases the admin and metrics listeners (a replacement can bind them), stops "
                        + "accepting, sends GOAWAY to every connection, lets streams that move bytes finish within "
                        + "--drain-timeout, cuts those idle for --drain-idle-timeout, then exits 0.",
                "Logs go to stderr, as text lines on a terminal and JSON lines otherwise (--log-format). Audit "
                        + "events (one JSON object per line) go to STATE_DIR/audit.jsonl, or to the file given by "
                        + "--audit-file, or to stderr with --audit-file - (under systemd: the journal); the log "
                        + "says where at startup.",
                "--stdio-control is for a parent process, not for a person or a service manager: desktop-ingress "
                        + "open runs serve as the command of one ssh channel and, after the ready line, mints "
                        + "connection tokens and grants over serve's stdin and stdout (one JSON request and one "
                        + "JSON response per line), so no secret is on a command line; when stdin closes (the "
                        + "parent or its ssh is gone), serve stops as on SIGTERM and exits 0. With --init-keys it "
                        + "also creates the keys on first use; they never leave this machine."})
final class ServeCommand implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(ServeCommand.class);
    private static final Duration MAX_TIMEOUT = Duration.ofHours(1);
    /**
     * Keys of the gateway's JSON config file, derived from this command's options. Every command that takes
     * --config accepts the same file and reads the keys it needs.
     */
    static final Set<String> CONFIG_KEYS = SettingsProvider.keysOf(new ServeCommand(),
            StdioControlOptions.NOT_A_SETTING);

    @Spec
    CommandSpec spec;

    @Option(names = "--config", paramLabel = "FILE",
            description = "JSON config file: an object whose keys are this command's option names without --, "
                    + "e.g. {\"keys\": \"/etc/ptun/keys\", \"env\": \"dev1\", \"listen\": \"127.0.0.1:7443\"}; "
                    + "flags and PTUN_GATEWAY_* variables override it (default: $PTUN_GATEWAY_CONFIG, else none).")
    Path config;

    @Option(names = "--keys", paramLabel = "DIR",
            description = "Key directory (see 'keys init') or its verify-keys.jwks.json file. Only the public "
                    + "keys are read: the signing key need not be on the gateway host. Re-read within a second "
                    + "after 'keys rotate', without a restart (required; env PTUN_GATEWAY_KEYS).")
    Path keys;

    @Option(names = "--env", paramLabel = "ENV",
            description = "Environment this gateway serves; tokens and grants must name it (required; env "
                    + "PTUN_GATEWAY_ENV).")
    String environment;

    @Option(names = "--listen", paramLabel = "HOST:PORT|unix:PATH",
            description = "Address to listen on, e.g. 127.0.0.1:7443 or [::1]:7443; port 0 picks a free port "
                    + "(see the ready line). Prefer loopback and reach it through ssh -L or a relay; or a Unix "
                    + "socket, e.g. unix:/run/user/1000/ptun/gateway.sock (created rw-------, its directory rwx------ "
                    + "if missing, a stale one replaced; reach it with ssh -L PORT:PATH) (required; env "
                    + "PTUN_GATEWAY_LISTEN).")
    String listen;

    @Option(names = "--path", paramLabel = "PATH", defaultValue = MuxProtocol.DEFAULT_PATH,
            description = "HTTP path of the WebSocket endpoint (default: " + MuxProtocol.DEFAULT_PATH + ").")
    String path;

    @Option(names = "--tls-cert", paramLabel = "PEM",
            description = "PEM certificate chain: serve TLS (wss) instead of plain ws; needs --tls-key (default: no TLS).")
    Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "PEM",
            description = "PEM PKCS#8 private key for --tls-cert; keep it owner-only (default: no TLS).")
    Path tlsKey;

    @Option(names = "--dial-timeout", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            defaultValue = "5s",
            description = "How long connecting to a target may take before the stream fails with dial_timeout "
                    + "(default: 5s).")
    Duration dialTimeout;

    @Option(names = "--io-threads", paramLabel = "N", defaultValue = "" + GatewayConfig.DEFAULT_IO_THREADS,
            description = "Event-loop threads of the tunnel listener, its streams and their target connections, 1 "
                    + "to " + GatewayConfig.MAX_IO_THREADS + " (default: " + GatewayConfig.DEFAULT_IO_THREADS
                    + "); more for a gateway serving many busy desktops on a machine with more cores.")
    Integer ioThreads;

    @Option(names = "--drain-timeout", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            defaultValue = "60s",
            description = "On shutdown, the most streams in flight may continue after GOAWAY while they move "
                    + "bytes; what is still open then is cut (audit drain_cut, reason drain_timeout); 1ms to 1h "
                    + "(default: 60s).")
    Duration drainTimeout;

    @Option(names = "--drain-idle-timeout", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            description = "During that drain, a stream that moves no bytes either way for this long is cut at "
                    + "once (audit drain_cut, reason idle), so idle keep-alives and WebSockets do not hold the "
                    + "stop; 100ms to 1h (default: 5s).")
    Duration drainIdleTimeout;

    @Option(names = "--max-grant-lifetime", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            defaultValue = "15m",
            description = "Refuse grants whose lifetime (exp - the later of iat and nbf) exceeds this, even if "
                    + "validly signed (and grants whose nbf lies more than this after iat); grants "
                    + "should live minutes; at most 24h (default: 15m).")
    Duration maxGrantLifetime;

    @Option(names = "--allow-target", paramLabel = "CIDR", converter = CidrConverter.class,
            description = "Also allow targets in this network, e.g. 10.1.2.0/24 or fd12::/16; repeatable (env and "
                    + "config: comma-separated / a JSON array). Enables non-loopback targets: audited and logged "
                    + "as a warning (default: loopback only).")
    List<Cidr> allowTargets = new ArrayList<>();

    @Option(names = "--admin-listen", paramLabel = "HOST:PORT",
            description = "Serve the admin endpoint (revocation: see 'revoke') on this loopback address, e.g. "
                    + "127.0.0.1:7444 or 127.0.0.1:0. Its bearer token is written to STATE_DIR/"
                    + GatewayCli.ADMIN_TOKEN_FILE + " (rw-------), never printed (default: off).")
    String adminListen;

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "Where the admin token, the admin address (" + GatewayCli.ADMIN_STATE_FILE
                    + ") and the revocations (" + RevocationStore.FILE + ", read at start) go; created rwx------ "
                    + "if missing, refused (exit 3) if another user owns it or group/others may write it "
                    + "(default: $XDG_STATE_HOME/preview-tunnel-gateway, else ~/.local/state/preview-tunnel-gateway). "
                    + "One serve --admin-listen per directory: a second one refuses (exit 3, run.lock).")
    Path stateDir;

    @Option(names = "--metrics-listen", paramLabel = "HOST:PORT",
            description = "Serve Prometheus metrics at http://HOST:PORT/metrics on this loopback address, e.g. "
                    + "127.0.0.1:9464 (default: off).")
    String metricsListen;

    @Option(names = "--audit-file", paramLabel = "FILE",
            description = "Append the audit events (one JSON object per line) to this file, or write them to "
                    + "stderr with -; created rw-------, an existing one must be owner-only (default: "
                    + "STATE_DIR/audit.jsonl, rotated at 10 MiB keeping 5).")
    String auditFile;

    @Mixin
    LogOptions logOptions = new LogOptions();

    @ArgGroup(validate = false, heading = "%nAbuse limits (each also PTUN_GATEWAY_<NAME> and a config-file key; "
            + "what each defends: docs/security.md):%n")
    LimitOptions limits = new LimitOptions();

    @ArgGroup(validate = false, heading = "%nRun by a parent process (desktop-ingress open, over ssh):%n")
    StdioControlOptions control = new StdioControlOptions();

    private final ServiceRunner runner = new ServiceRunner(log, "gateway", () -> GatewayMain.standalone);
    private volatile GatewayServer server; // set once started, for tests

    @Override
    public Integer call() {
        // Closed after the runner's last line ("gateway stopped"), so that line is in the chosen format too.
        try (ConsoleLogging applied = logOptions.apply()) {
            return runner.call(this::run);
        }
    }

    private int run() {
        // 1. Settings (flags > PTUN_GATEWAY_* > config file > defaults: picocli fills the options through the
        //    settings provider; s names where each value came from), before touching keys or the network.
        Settings s = SettingsProvider.settings(spec, config, GatewayCli.ENV_PREFIX, CONFIG_KEYS);
        Path keysPath = s.require("keys", "DIR", keys);
        String env = s.require("env", "ENV", environment);
        Cli.requireNonBlank(spec, env, s.name("env"));
        String listenText = s.require("listen", "HOST:PORT", listen);
        SocketAddress listenAddress = parseListen(s.name("listen"), listenText);
        String tunnelPath = path;
        if (!tunnelPath.matches("/[A-Za-z0-9._~/-]{0,255}")) {
            throw s.invalid("path", "must start with / and contain only letters, digits and . _ ~ / -, got '"
                    + Cli.shown(tunnelPath) + "'");
        }
        Duration dial = s.inRange("dial-timeout", dialTimeout, Duration.ofMillis(100), MAX_TIMEOUT);
        int threads = s.count("io-threads", ioThreads, 1, GatewayConfig.MAX_IO_THREADS);
        Duration drain = s.inRange("drain-timeout", drainTimeout, Duration.ofMillis(1), MAX_TIMEOUT);
        Duration drainIdle = s.inRange("drain-idle-timeout", requireNonNullElse(drainIdleTimeout,
                GatewayServer.DEFAULT_DRAIN_IDLE), Duration.ofMillis(100), MAX_TIMEOUT);
        Duration maxLifetime = s.inRange("max-grant-lifetime", maxGrantLifetime, Duration.ofSeconds(1),
                GrantIssuer.MAX_TTL);
        Path cert = tlsCert;
        Path key = tlsKey;
        if ((cert == null) != (key == null)) {
            throw Cli.usage(spec, "--tls-cert and --tls-key must be given together");
        }
        List<Cidr> allowed = s.list("allow-target", allowTargets, CidrConverter::parse);
        InetSocketAddress adminAddress = loopbackOrNull(s, "admin-listen", adminListen, 7444);
        InetSocketAddress metricsAddress = loopbackOrNull(s, "metrics-listen", metricsListen, 9464);
        Path state = stateDir != null ? stateDir : GatewayCli.defaultStateDir();
        GatewayConfig limited = limits.applyTo(GatewayConfig.defaults(env, listenAddress), s);
        LocalHttpServer.Limits localLimits = limits.localLimits(s);
        if (adminAddress != null) {
            // The admin endpoint's files (admin.json, its token) are the state directory's: one serve writes them.
            StateDirectory.prepare(state, "the admin token file");
            runner.open(StateLock.acquire(state, "env-gateway serve --admin-listen",
                    "give this one another --state-dir"));
        }
        // Rotated only under the lock: without --admin-listen several gateways may share the directory.
        runner.open(AuditDestination.apply(s, AuditLog.LOGGER, auditFile, state, adminAddress != null));

        // 2. TLS and keys.
        SslContext tls = cert == null ? null : ServeKeyFiles.serverTls(spec, cert, key);
        VerifierPolicy defaults = VerifierPolicy.defaults();
        VerifierPolicy policy = new VerifierPolicy(defaults.clockSkew(), maxLifetime,
                defaults.maxTokenLifetime(), defaults.maxTokenLength());
        control.prepareKeys(keysPath);
        ReloadingVerificationKeys verifyKeys = ServeKeyFiles.verificationKeys(keysPath);

        // 3. Configuration.
        TargetPolicy targetPolicy = allowed.isEmpty()
                ? TargetPolicy.loopbackOnly() : TargetPolicy.loopbackPlus(List.copyOf(allowed));
        GatewayConfig gatewayConfig = new GatewayConfig(env, listenAddress, tunnelPath, limited.mux(), policy,
                targetPolicy, dial, limited.handshakeTimeout(), drain, threads, limited.limits());
        Map<String, String> inEffect = LimitOptions.describe(gatewayConfig, localLimits);
        inEffect.put("io-threads", Integer.toString(threads));
        ServiceRunner.logLimits(log, inEffect);
        if (!allowed.isEmpty()) {
            String cidrs = allowed.stream().map(Cidr::toString).collect(Collectors.joining(","));
            log.warn("non-loopback targets are enabled: grants may reach {} in addition to loopback", cidrs);
            new AuditLog("gateway").event(GatewayAuditEvent.NON_LOOPBACK_TARGETS_ENABLED).put("env", env)
                    .put("cidrs", cidrs).write();
        }
        if (listenAddress instanceof InetSocketAddress inet && !inet.getAddress().isLoopbackAddress() && tls == null) {
            log.warn("listening on non-loopback address {} without TLS: connection tokens and grants cross the "
                    + "network in clear text; use --tls-cert/--tls-key or listen on loopback", listenText);
        }

        StdioControlChannel channel = control.channel(spec, keysPath, env, maxLifetime, targetPolicy, runner::stop);

        // 4. Start (gateway, then admin and metrics endpoints), announce, wait.
        PrometheusMeterRegistry prometheus = metricsAddress == null ? null : MetricsServer.newRegistry();
        MeterRegistry registry = prometheus != null ? prometheus : new SimpleMeterRegistry();
        BuildInfo.register(registry, "ptun.gateway", GatewayVersionProvider.projectVersion(),
                GatewayVersionProvider.commit(), MuxProtocol.SUBPROTOCOL);
        RevocationStore revocationStore = adminAddress != null || Files.exists(state) ? openRevocations(state) : null;
        String where = listenAddress instanceof UnixDomainSocketAddress socket
                ? new UnixSocketPath(socket.getPath()).toString() : Cli.hostPort((InetSocketAddress) listenAddress);
        if (listenAddress instanceof UnixDomainSocketAddress socket) {
            // Removed by the gateway itself when it stops accepting, not after its drain: by then a replacement
            // may listen at the same path.
            UnixSocketFile.prepare(socket.getPath(), s.name("listen"));
        }
        // Stopped in reverse: the listeners a replacement on the same addresses needs go before the drain: the
        // metrics endpoint, the admin state file, then the admin endpoint with its token, then the gateway.
        GatewayServer running = runner.open(start(gatewayConfig, verifyKeys, tls, where, registry,
                revocationStore).drainIdleTimeout(drainIdle));
        AdminServer admin = null;
        if (adminAddress != null) {
            admin = runner.open(startAdmin(running, adminAddress, state.resolve(GatewayCli.ADMIN_TOKEN_FILE),
                    localLimits));
            Path adminFile = state.resolve(GatewayCli.ADMIN_STATE_FILE);
            runner.open(() -> ServiceRunner.deleteQuietly(log, adminFile));
            writeAdminState(adminFile, admin);
        }
        MetricsServer metricsServer = metricsAddress == null ? null
                : runner.open(Cli.startMetrics(metricsAddress, prometheus, localLimits));
        server = running;
        AdminServer adminServer = admin;
        // Registered last, closed first: a stop for any reason means the end of stdin that follows is no news.
        runner.open(channel);
        runner.serve("ptun-gateway-shutdown", () -> {
            Cli.printJson(ServeReadyLine.of(running, tls != null, tunnelPath, env, adminServer, metricsServer));
            StdioControlOptions.start(channel);
        });
        return ExitCodes.OK;
    }

    /** HOST:PORT (resolved) or {@code unix:/absolute/path}; a malformed value is a usage error naming both forms. */
    private SocketAddress parseListen(String option, String text) {
        if (!text.startsWith(UnixSocketPath.SCHEME)) {
            return Cli.parseListen(spec, option, text, 7443);
        }
        try {
            return UnixSocketPath.parse(text).resolve();
        } catch (IllegalArgumentException e) {
            throw Cli.usage(spec, option + " must be HOST:PORT or unix:/absolute/path (e.g. unix:"
                    + "/run/user/1000/ptun/gateway.sock), got '" + Cli.shown(text) + "': " + e.getMessage());
        }
    }

    /** A loopback HOST:PORT for {@code key}, or null when not set. */
    private InetSocketAddress loopbackOrNull(Settings s, String key, String text, int examplePort) {
        if (text == null) {
            return null;
        }
        return s.loopbackListen(spec, key, text, examplePort);
    }

    /**
     * The state directory's revocations, in force before the first connection: a restart must not undo a
     * revocation. A state directory or file other users could change, or a file that does not read back
     * exactly, refuses the start (exit 3).
     */
    static RevocationStore openRevocations(Path state) {
        StateDirectory.prepare(state, "the admin token file");
        try {
            return RevocationStore.open(state);
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied reading " + e.getFile());
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage());
        }
    }

    private static GatewayServer start(GatewayConfig config, ReloadingVerificationKeys keys, SslContext tls,
                                       String where, MeterRegistry registry, RevocationStore store) {
        // This overload wires the gateway's revocation list into grant verification: a revoked grant or session
        // is refused from then on, not only closed.
        return ServiceRunner.listen(() -> GatewayServer.start(config, keys, tls, registry, store, Clock.systemUTC()),
                "", where);
    }

    private static AdminServer startAdmin(GatewayServer running, InetSocketAddress address, Path tokenFile,
                                          LocalHttpServer.Limits localLimits) {
        return ServiceRunner.listen(() -> {
            try {
                return AdminServer.start(running::status, running.revocations(), address, tokenFile, localLimits);
            } catch (AccessDeniedException e) {
                throw new CliException(ExitCodes.REFUSED, "permission denied writing the admin token file "
                        + tokenFile);
            }
        }, " (--admin-listen)", address);
    }

    /** {@code admin.json}: where the admin endpoint listens and where its token is; never the token itself. */
    private static void writeAdminState(Path file, AdminServer admin) {
        try {
            OwnerOnlyFiles.write(file, JsonTrees.write(Cli.json()
                    .put("url", admin.url())
                    .put("tokenFile", admin.tokenFile().toAbsolutePath().toString())
                    .put("pid", ProcessHandle.current().pid())) + "\n");
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot write " + file + " (" + e.getClass().getSimpleName()
                    + ")");
        }
    }

    /**
     * Stops the gateway gracefully (GOAWAY, drain) and releases the thread blocked in {@link #call()}. Idempotent
     * and thread-safe; returns once the server is closed. Used by tests.
     */
    void stop() {
        runner.stop();
    }

    /** Waits until the gateway is ready or {@link #call()} has ended (failed); true if that happened in time. */
    boolean awaitStarted(long timeout, TimeUnit unit) throws InterruptedException {
        return runner.awaitStarted(timeout, unit);
    }

    /** The running server, or null before start / after a failed start. */
    GatewayServer server() {
        return server;
    }
}
