package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.gateway.policy.Cidr;
import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.ReloadingVerificationKeys;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.mux.MuxProtocol;
import dev.previewtunnel.mux.audit.AuditLog;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.ChannelException;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * {@code serve}: runs the gateway until SIGTERM/SIGINT. Prints the ready line on stdout once bound, then blocks;
 * a JVM shutdown hook closes the server gracefully (GOAWAY, drain) and releases the waiting thread.
 *
 * <p>Tests run it in-process on a background thread and use {@link #awaitStarted}, {@link #server()} and
 * {@link #stop()} instead of a signal.
 */
@Command(name = "serve",
        mixinStandardHelpOptions = true,
        versionProvider = GatewayVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footer = GatewayMain.FOOTER,
        description = {
                "Run the tunnel endpoint of one environment until SIGTERM or SIGINT.",
                "Serves a WebSocket endpoint (subprotocol " + MuxProtocol.SUBPROTOCOL + ") at LISTEN and PATH, "
                        + "over TLS (wss) when --tls-cert and --tls-key are given. Each connection must present "
                        + "a connection token for ENV in its Authorization header (never in the URL); each stream must carry its own "
                        + "grant, which names the only target it may reach. Targets must be loopback addresses "
                        + "unless --allow-target adds networks.",
                "When listening, prints exactly one JSON line on stdout with the fields event (\"ready\"), "
                        + "listen (HOST:PORT actually bound), url (the ws or wss URL to dial), env, protocol ("
                        + MuxProtocol.SUBPROTOCOL + "), transport (epoll or nio) and version.",
                "On SIGTERM/SIGINT: stops accepting, sends GOAWAY to every connection, lets streams in flight "
                        + "finish within --drain-timeout, then exits 0.",
                "Logs are JSON lines on stderr. Audit events (one JSON object per line) go to stderr, or to a file "
                        + "with: java -Dptun.audit.file=FILE -jar env-gateway.jar serve ..."})
final class ServeCommand implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(ServeCommand.class);
    private static final Duration MAX_TIMEOUT = Duration.ofHours(1);

    @Spec
    CommandSpec spec;

    @Option(names = "--keys", required = true, paramLabel = "DIR",
            description = "Key directory (see 'keys init') or its verify-keys.jwks.json file. Only the public "
                    + "keys are read: the signing key need not be on the gateway host. Re-read within a second "
                    + "after 'keys rotate', without a restart (required).")
    Path keys;

    @Option(names = "--env", required = true, paramLabel = "ENV",
            description = "Environment this gateway serves; tokens and grants must name it (required).")
    String environment;

    @Option(names = "--listen", required = true, paramLabel = "HOST:PORT",
            description = "Address to listen on, e.g. 127.0.0.1:7443 or [::1]:7443; port 0 picks a free port "
                    + "(see the ready line). Prefer loopback and reach it through ssh -L or a relay (required).")
    String listen;

    @Option(names = "--path", paramLabel = "PATH", defaultValue = MuxProtocol.DEFAULT_PATH,
            description = "HTTP path of the WebSocket endpoint (default: ${DEFAULT-VALUE}).")
    String path;

    @Option(names = "--tls-cert", paramLabel = "PEM",
            description = "PEM certificate chain: serve TLS (wss) instead of plain ws; needs --tls-key (default: no TLS).")
    Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "PEM",
            description = "PEM PKCS#8 private key for --tls-cert; keep it owner-only (default: no TLS).")
    Path tlsKey;

    @Option(names = "--dial-timeout", paramLabel = "DURATION", defaultValue = "5s",
            converter = Converters.DurationConverter.class,
            description = "How long connecting to a target may take before the stream fails with dial_timeout "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration dialTimeout;

    @Option(names = "--drain-timeout", paramLabel = "DURATION", defaultValue = "10s",
            converter = Converters.DurationConverter.class,
            description = "On shutdown, how long streams in flight may continue after GOAWAY "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration drainTimeout;

    @Option(names = "--max-grant-lifetime", paramLabel = "DURATION", defaultValue = "15m",
            converter = Converters.DurationConverter.class,
            description = "Refuse grants whose lifetime (exp - iat) exceeds this, even if validly signed; grants "
                    + "should live minutes; at most 24h (default: ${DEFAULT-VALUE}).")
    Duration maxGrantLifetime;

    @Option(names = "--allow-target", paramLabel = "CIDR", converter = CidrConverter.class,
            description = "Also allow targets in this network, e.g. 10.1.2.0/24 or fd12::/16; repeatable. "
                    + "Enables non-loopback targets: audited and logged as a warning (default: loopback only).")
    List<Cidr> allowTargets = new ArrayList<>();

    private final Object lock = new Object();
    private GatewayServer server; // guarded by lock
    private boolean stopRequested; // guarded by lock
    private final CountDownLatch started = new CountDownLatch(1);
    private final CountDownLatch stopped = new CountDownLatch(1);

    @Override
    public Integer call() {
        try {
            return run();
        } finally {
            // Whatever happened, nobody waiting for start or stop may wait forever.
            started.countDown();
            stopped.countDown();
        }
    }

    private int run() {
        // 1. Arguments, before touching keys or the network.
        Cli.requireNonBlank(spec, environment, "--env");
        InetSocketAddress listenAddress = Cli.parseListen(spec, "--listen", listen, 7443);
        if (path == null || !path.matches("/[A-Za-z0-9._~/-]{0,255}")) {
            throw Cli.usage(spec, "--path must start with / and contain only letters, digits and . _ ~ / -, got '"
                    + Cli.shown(path) + "'");
        }
        Cli.requireRange(spec, dialTimeout, "--dial-timeout", Duration.ofMillis(100), MAX_TIMEOUT);
        Cli.requireRange(spec, drainTimeout, "--drain-timeout", Duration.ofMillis(1), MAX_TIMEOUT);
        Cli.requireRange(spec, maxGrantLifetime, "--max-grant-lifetime", Duration.ofSeconds(1), GrantIssuer.MAX_TTL);
        if ((tlsCert == null) != (tlsKey == null)) {
            throw Cli.usage(spec, "--tls-cert and --tls-key must be given together");
        }

        // 2. TLS and keys.
        SslContext tls = tlsCert == null ? null : loadTls();
        VerifierPolicy defaults = VerifierPolicy.defaults();
        VerifierPolicy policy = new VerifierPolicy(defaults.clockSkew(), maxGrantLifetime,
                defaults.maxTokenLifetime(), defaults.maxTokenLength());
        // The gateway only verifies: it reads the public JWK Set and never needs the signing key, so the
        // environment's private key can stay where grants are issued. --keys takes the directory or the file.
        Path verifyFile = Files.isDirectory(keys) ? keys.resolve(KeyDirectory.VERIFY_KEYS_FILE) : keys;
        if (!Files.exists(verifyFile)) {
            throw new CliException(ExitCodes.REFUSED, "no verify keys at " + verifyFile
                    + "; create keys with: env-gateway keys init --dir DIR");
        }
        ReloadingVerificationKeys verifyKeys;
        try {
            verifyKeys = new ReloadingVerificationKeys(verifyFile, Clock.systemUTC());
        } catch (IOException | IllegalStateException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot load verify keys from " + verifyFile + ": "
                    + e.getMessage());
        }
        GrantVerifier verifier = new GrantVerifier(verifyKeys, Clock.systemUTC(), policy);

        // 3. Configuration.
        TargetPolicy targetPolicy = allowTargets.isEmpty()
                ? TargetPolicy.loopbackOnly() : TargetPolicy.loopbackPlus(List.copyOf(allowTargets));
        GatewayConfig base = GatewayConfig.defaults(environment, listenAddress);
        GatewayConfig config = new GatewayConfig(base.environment(), base.listen(), path, base.mux(), policy,
                targetPolicy, dialTimeout, base.handshakeTimeout(), drainTimeout, base.ioThreads());
        if (!allowTargets.isEmpty()) {
            String cidrs = allowTargets.stream().map(Cidr::toString).collect(Collectors.joining(","));
            log.warn("non-loopback targets are enabled: grants may reach {} in addition to loopback", cidrs);
            new AuditLog("gateway").event("non_loopback_targets_enabled").put("env", environment)
                    .put("cidrs", cidrs).write();
        }
        if (!listenAddress.getAddress().isLoopbackAddress() && tls == null) {
            log.warn("listening on non-loopback address {} without TLS: connection tokens and grants cross the "
                    + "network in clear text; use --tls-cert/--tls-key or listen on loopback", listen);
        }

        // 4. Start, announce, wait.
        GatewayServer running = start(config, verifier, tls, listenAddress);
        boolean closeNow;
        synchronized (lock) {
            server = running;
            closeNow = stopRequested;
        }
        if (closeNow) { // stop() came while binding
            closeGracefully(running, "stop requested during start");
            return ExitCodes.OK;
        }
        Thread hook = new Thread(this::onSignal, "ptun-gateway-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            Cli.printJson(Cli.json()
                    .put("event", "ready")
                    .put("listen", Cli.hostPort(running.address()))
                    .put("url", running.url(tls != null))
                    .put("env", environment)
                    .put("protocol", MuxProtocol.SUBPROTOCOL)
                    .put("transport", running.transportName())
                    .put("version", GatewayVersionProvider.projectVersion()));
            started.countDown();
            awaitStopped();
        } finally {
            stop(); // no-op when already stopped; closes the server if printing or waiting failed
            removeHook(hook);
        }
        return ExitCodes.OK;
    }

    private GatewayServer start(GatewayConfig config, GrantVerifier verifier, SslContext tls,
                                InetSocketAddress listenAddress) {
        try {
            return GatewayServer.start(config, verifier, tls, new SimpleMeterRegistry());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException(ExitCodes.INTERNAL, "interrupted while starting");
        } catch (Exception e) {
            // Netty rethrows the bind failure itself: java.net.BindException (NIO), NativeIoException (epoll).
            if (e instanceof IOException || e instanceof ChannelException) {
                throw new CliException(ExitCodes.UNREACHABLE, "cannot listen on " + Cli.hostPort(listenAddress)
                        + ": " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
            }
            throw e;
        }
    }

    /** Shutdown hook: graceful close; when run as the main program, exit 0 rather than the signal's 128+n. */
    private void onSignal() {
        log.atInfo().setMessage("shutdown signal received, draining").addKeyValue("event", "stopping").log();
        int code = ExitCodes.OK;
        try {
            stop("signal");
        } catch (RuntimeException e) {
            log.error("graceful shutdown failed: {}", e.toString());
            code = ExitCodes.INTERNAL;
        }
        if (GatewayMain.standalone) {
            System.out.flush();
            System.err.flush();
            // The JVM would otherwise exit with 128+signal after the hooks; a clean drain is a clean exit.
            Runtime.getRuntime().halt(code);
        }
    }

    /**
     * Stops the gateway gracefully (GOAWAY, drain) and releases the thread blocked in {@link #call()}. Idempotent
     * and thread-safe; returns once the server is closed. Used by the shutdown hook and by tests.
     */
    void stop() {
        stop("stop");
    }

    private void stop(String reason) {
        GatewayServer toClose;
        synchronized (lock) {
            if (stopRequested) {
                toClose = null;
            } else {
                stopRequested = true;
                toClose = server;
            }
        }
        if (toClose != null) {
            closeGracefully(toClose, reason);
        }
        boolean interrupted = false;
        while (true) {
            try {
                stopped.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void closeGracefully(GatewayServer s, String reason) {
        long t0 = System.nanoTime();
        try {
            s.close();
        } finally {
            log.atInfo().setMessage("gateway stopped")
                    .addKeyValue("event", "stopped")
                    .addKeyValue("reason", reason)
                    .addKeyValue("millis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0))
                    .log();
            stopped.countDown();
        }
    }

    private void awaitStopped() {
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void removeHook(Thread hook) {
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // JVM shutting down: the hook is what stopped us.
        }
    }

    /** Waits until the gateway is ready or {@link #call()} has ended (failed); true if that happened in time. */
    boolean awaitStarted(long timeout, TimeUnit unit) throws InterruptedException {
        return started.await(timeout, unit);
    }

    /** The running server, or null before start / after a failed start. */
    GatewayServer server() {
        synchronized (lock) {
            return server;
        }
    }

    private SslContext loadTls() {
        Cli.requireReadableFile(spec, tlsCert, "--tls-cert");
        Cli.requireReadableFile(spec, tlsKey, "--tls-key");
        warnIfShared(tlsKey);
        try {
            return SslContextBuilder.forServer(tlsCert.toFile(), tlsKey.toFile()).build();
        } catch (javax.net.ssl.SSLException | IllegalArgumentException e) {
            // Netty's messages name the file and the problem, never the key's content.
            throw new CliException(ExitCodes.USAGE, "cannot load TLS certificate " + tlsCert + " / key " + tlsKey
                    + ": " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
    }

    private static void warnIfShared(Path keyFile) {
        try {
            if (keyFile.getFileSystem().supportedFileAttributeViews().contains("posix")
                    && Files.getPosixFilePermissions(keyFile).stream()
                    .anyMatch(p -> p != PosixFilePermission.OWNER_READ && p != PosixFilePermission.OWNER_WRITE)) {
                log.warn("TLS private key {} is accessible beyond its owner; consider chmod 600 {}", keyFile, keyFile);
            }
        } catch (IOException | RuntimeException e) {
            // only a warning
        }
    }
}
