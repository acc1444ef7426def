package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.StateFiles;
import dev.previewtunnel.mux.MuxProtocol;
import io.netty.channel.ChannelException;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code run}: one browser session's proxy, until SIGTERM/SIGINT. Prints the ready line on stdout once listening,
 * then blocks; a JVM shutdown hook closes the ingress, deletes the credentials file and releases the waiting
 * thread.
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
                "Run the proxy for one browser session until SIGTERM or SIGINT.",
                "Listens on LISTEN (loopback only) as an HTTP proxy that requires the session's own credential, and "
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
                "Writes the session's proxy credential, {\"username\":...,\"password\":...}, to the owner-only "
                        + "(rw-------) file STATE_DIR/session-ID.credentials.json, and, when listening, prints "
                        + "exactly one JSON line on stdout with the fields event (\"ready\"), proxy (HOST:PORT), "
                        + "credentialsFile, session, gateway, grants (the granted targets), version and protocol.",
                "On SIGTERM/SIGINT: closes the proxy and the tunnel, deletes the credentials file, exits 0.",
                "Logs are JSON lines on stderr. Audit events (one JSON object per line) go to stderr, or to a file "
                        + "with: java -Dptun.audit.file=FILE -jar desktop-ingress.jar run ..."})
final class RunCommand implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(RunCommand.class);
    /** A token or grant file is a few KiB at most; anything this big is the wrong file. */
    private static final long MAX_SECRET_FILE = 1024 * 1024;
    private static final int MAX_TOKEN_LENGTH = 16 * 1024;
    private static final String SESSION_ID = "[A-Za-z0-9._-]{1,64}";

    @Spec
    CommandSpec spec;

    @Option(names = "--gateway", required = true, paramLabel = "URL",
            description = "The gateway's tunnel endpoint: ws://HOST:PORT/PATH or wss://HOST:PORT/PATH, the url in "
                    + "the ready line of 'env-gateway serve'. No query and no user info: the token "
                    + "travels in a header, never in a URL (required).")
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
                    + "Repeatable; at least one grant is required, from either option.")
    List<String> grants = new ArrayList<>();

    @Option(names = "--listen", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:0",
            description = "Where the proxy listens: a loopback address (127.0.0.0/8 or [::1]) only; port 0 picks "
                    + "a free port, reported in the ready line (default: ${DEFAULT-VALUE}).")
    String listen;

    @Option(names = "--pool", paramLabel = "N", defaultValue = "2",
            description = "Tunnel connections kept open to the gateway, 1 to 64 (default: ${DEFAULT-VALUE}).")
    int pool;

    @Option(names = "--gateway-ca", paramLabel = "PEM",
            description = "PEM certificate(s) to trust for a wss:// gateway instead of the JDK's default trust "
                    + "store (default: the JDK's trust store).")
    Path gatewayCa;

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "Directory for the credentials file; created rwx------ if missing "
                    + "(default: $XDG_STATE_HOME/preview-tunnel when XDG_STATE_HOME is set, else "
                    + "~/.local/state/preview-tunnel).")
    Path stateDir;

    @Option(names = "--session-id", paramLabel = "ID", defaultValue = "default",
            description = "Name of the browser session: 1 to 64 letters, digits, '.', '_' or '-'; the proxy "
                    + "user is ptun-ID (default: ${DEFAULT-VALUE}).")
    String sessionId;

    private final Object lock = new Object();
    private Ingress ingress; // guarded by lock
    private Path credentialsFile; // guarded by lock
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
        // 1. Arguments, before reading secrets or touching the network.
        URI gatewayUri = parseGateway(spec, gateway);
        boolean tls = "wss".equals(gatewayUri.getScheme());
        if (gatewayCa != null && !tls) {
            throw Cli.usage(spec, "--gateway-ca applies to wss:// gateways only");
        }
        if (sessionId == null || !sessionId.matches(SESSION_ID)) {
            throw Cli.usage(spec, "--session-id must be 1 to 64 letters, digits, '.', '_' or '-', got '"
                    + Cli.shown(sessionId) + "'");
        }
        if (pool < 1 || pool > 64) {
            throw Cli.usage(spec, "--pool must be 1 to 64, got " + pool);
        }
        InetSocketAddress listenAddress = Cli.parseListen(spec, "--listen", listen, 0);
        if (!listenAddress.getAddress().isLoopbackAddress()) {
            throw Cli.usage(spec, "--listen must be a loopback address (127.0.0.0/8 or [::1]), got '"
                    + Cli.shown(listen) + "': whoever can reach the proxy can use this desktop user's access to "
                    + "the environment, so it must not be reachable from other machines");
        }

        // 2. Secrets and TLS. Nothing here may echo a token or a grant.
        String tokenValue = readToken();
        BrowserSession session = BrowserSession.create(sessionId);
        Set<String> targets = attachGrants(session);
        SslContext ssl = tls ? clientTls() : null;
        Path dir = stateDir != null ? stateDir : StateFiles.defaultDirectory();
        prepareStateDir(dir);
        Path credentials = StateFiles.credentialsFile(dir, sessionId);
        String gatewayPath = gatewayUri.getRawPath();
        if (gatewayPath == null || gatewayPath.isEmpty() || gatewayPath.equals("/")) {
            log.warn("--gateway has no path; env-gateway serves its tunnel at {} unless started with --path",
                    MuxProtocol.DEFAULT_PATH);
        }

        // 3. Start, write the credential, announce, wait.
        IngressConfig config = IngressConfig.defaults(listenAddress, gatewayUri).withPoolSize(pool);
        Ingress running = start(config, tokenValue, ssl, listenAddress);
        running.sessions().add(session);
        try {
            writeCredentials(credentials, session);
        } catch (RuntimeException e) {
            running.close();
            throw e;
        }
        boolean closeNow;
        synchronized (lock) {
            ingress = running;
            credentialsFile = credentials;
            closeNow = stopRequested;
        }
        if (closeNow) { // stop() came while starting
            shutdown(running, credentials, "stop requested during start");
            return ExitCodes.OK;
        }
        Thread hook = new Thread(this::onSignal, "ptun-ingress-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            watchFirstConnection(running, gatewayUri);
            String proxy = Cli.hostPort(running.proxyAddress());
            ObjectNode ready = Cli.json()
                    .put("event", "ready")
                    .put("proxy", proxy)
                    .put("credentialsFile", credentials.toAbsolutePath().toString())
                    .put("session", session.id())
                    .put("gateway", gatewayUri.toString());
            ArrayNode list = ready.putArray("grants");
            targets.forEach(list::add);
            ready.put("version", IngressVersionProvider.projectVersion())
                    .put("protocol", MuxProtocol.SUBPROTOCOL);
            Cli.printJson(ready);
            String first = targets.iterator().next();
            log.atInfo()
                    .setMessage("proxy ready; start a browser profile of its own with: chromium "
                            + "--proxy-server=http://{} --proxy-bypass-list='<-loopback>' "
                            + "--user-data-dir=$(mktemp -d) http://{}/ and give the proxy username and password "
                            + "from {} when asked (Playwright: proxy server "
                            + "http://{} with the same username and password)")
                    .addArgument(proxy).addArgument(first).addArgument(credentials.toAbsolutePath())
                    .addArgument(proxy)
                    .addKeyValue("event", "ready")
                    .log();
            started.countDown();
            awaitStopped();
        } finally {
            stop(); // no-op when already stopped; closes the ingress if printing or waiting failed
            removeHook(hook);
        }
        return ExitCodes.OK;
    }

    /** ws:// or wss://, a host, no user info, query or fragment. The value is never echoed: it may hold a secret. */
    static URI parseGateway(CommandSpec spec, String text) {
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw Cli.usage(spec, "--gateway is not a valid URL; expected ws://HOST:PORT/PATH or wss://HOST:PORT/PATH");
        }
        if (uri.getRawQuery() != null || uri.getRawUserInfo() != null || uri.getRawFragment() != null) {
            throw Cli.usage(spec, "--gateway must not carry a query, user info or fragment: the connection token "
                    + "travels in the Authorization header (--token-file), never in a URL");
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("ws") && !scheme.equals("wss")) {
            throw Cli.usage(spec, "--gateway must be a ws:// or wss:// URL (the url field of env-gateway's "
                    + "ready line)" + (scheme.isEmpty() ? "" : ", got scheme '" + Cli.shown(scheme) + "'"));
        }
        if (uri.isOpaque() || uri.getHost() == null || uri.getHost().isEmpty()) {
            throw Cli.usage(spec, "--gateway needs a host: ws://HOST:PORT/PATH or wss://HOST:PORT/PATH");
        }
        // Lower-case scheme (WS://... works too); everything else stays as given.
        return scheme.equals(uri.getScheme()) ? uri : URI.create(scheme + text.substring(scheme.length()));
    }

    private String readToken() {
        if (token != null && tokenFile != null) {
            throw Cli.usage(spec, "give either --token-file or --token, not both");
        }
        if (token == null && tokenFile == null) {
            throw Cli.usage(spec, "a connection token is required: --token-file FILE (recommended; "
                    + "'env-gateway token issue' prints one) or --token TOKEN");
        }
        String value;
        String source;
        if (tokenFile != null) {
            source = "--token-file " + tokenFile;
            List<String> lines = readSecretLines(tokenFile, "--token-file");
            if (lines.size() != 1) {
                throw Cli.usage(spec, source + " must hold the token on one line, found "
                        + (lines.isEmpty() ? "nothing" : lines.size() + " lines"));
            }
            value = lines.get(0);
        } else {
            source = "--token";
            value = token.strip();
        }
        boolean printable = value.chars().allMatch(c -> c > 0x20 && c < 0x7f);
        if (value.isEmpty() || value.length() > MAX_TOKEN_LENGTH || !printable) {
            throw Cli.usage(spec, source + ": not a connection token (expected one line of printable ASCII "
                    + "without spaces, as printed by 'env-gateway token issue'); the value is not shown");
        }
        return value;
    }

    /** Adds every grant to the session; returns the granted targets in order ("localhost:5173"). */
    private Set<String> attachGrants(BrowserSession session) {
        Set<String> targets = new LinkedHashSet<>();
        int count = 0;
        for (int i = 0; i < grants.size(); i++) {
            attach(session, grants.get(i).strip(), "--grant #" + (i + 1), targets);
            count++;
        }
        for (Path file : grantFiles) {
            List<String> lines = readSecretLines(file, "--grant-file");
            for (int i = 0; i < lines.size(); i++) {
                attach(session, lines.get(i), "line " + (i + 1) + " of --grant-file " + file, targets);
                count++;
            }
        }
        if (count == 0) {
            throw Cli.usage(spec, "at least one grant is required: --grant-file FILE (recommended) or --grant GRANT; "
                    + "'env-gateway grant issue' issues them");
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
        }
        targets.add(target);
        UnverifiedGrantView view = UnverifiedGrantView.decode(grant);
        if (view.expiresAt().isBefore(Instant.now())) {
            log.warn("{}: grant {} for {} expired at {}; the gateway will refuse it, issue a new one", where,
                    view.jti(), target, view.expiresAt());
        }
    }

    /**
     * The non-blank lines of a token or grant file that are not # comments, stripped. A missing file is a usage
     * error (exit 1), an unreadable one a refusal (exit 3). Warns when others may read it.
     */
    private List<String> readSecretLines(Path file, String option) {
        Cli.requireReadableFile(spec, file, option);
        warnIfShared(file, option);
        String content;
        try {
            if (Files.size(file) > MAX_SECRET_FILE) {
                throw Cli.usage(spec, option + " " + file + " is larger than 1 MiB: not a token or grant file");
            }
            content = Files.readString(file, StandardCharsets.UTF_8);
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, option + " file " + file
                    + " is not readable (permission denied)");
        } catch (IOException e) {
            // Never the exception's message: a decoder's could quote the content.
            throw new CliException(ExitCodes.REFUSED, "cannot read " + option + " file " + file + " ("
                    + e.getClass().getSimpleName() + ")");
        }
        List<String> lines = new ArrayList<>();
        content.lines().map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#")).forEach(lines::add);
        return lines;
    }

    private static void warnIfShared(Path file, String option) {
        try {
            if (file.getFileSystem().supportedFileAttributeViews().contains("posix")) {
                Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
                if (perms.stream().anyMatch(p -> !p.name().startsWith("OWNER_"))) {
                    log.warn("{} file {} is accessible by group/others ({}); it holds secrets: chmod 600 {}", option,
                            file, PosixFilePermissions.toString(perms), file);
                }
            }
        } catch (IOException | RuntimeException e) {
            // only a warning
        }
    }

    private SslContext clientTls() {
        SslContextBuilder builder = SslContextBuilder.forClient();
        if (gatewayCa != null) {
            Cli.requireReadableFile(spec, gatewayCa, "--gateway-ca");
            builder.trustManager(gatewayCa.toFile());
        }
        try {
            return builder.build();
        } catch (javax.net.ssl.SSLException | IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "cannot load --gateway-ca " + gatewayCa + ": "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
    }

    /** Creates the state directory (rwx------) if missing; an existing one keeps its permissions, with a warning. */
    private static void prepareStateDir(Path dir) {
        try {
            if (Files.exists(dir) && !Files.isDirectory(dir)) {
                throw new CliException(ExitCodes.REFUSED, "state directory " + dir + " exists and is not a directory");
            }
            StateFiles.ensureDirectory(dir);
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied creating state directory " + dir + " ("
                    + e.getFile() + ")");
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot create state directory " + dir + ": "
                    + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage()));
        }
        warnIfSharedDirectory(dir);
    }

    private static void warnIfSharedDirectory(Path dir) {
        try {
            if (dir.getFileSystem().supportedFileAttributeViews().contains("posix")) {
                Set<PosixFilePermission> perms = Files.getPosixFilePermissions(dir);
                if (perms.stream().anyMatch(p -> !p.name().startsWith("OWNER_"))) {
                    log.warn("state directory {} is accessible by group/others ({}); consider chmod 700 {} (the "
                            + "credentials file itself is owner-only)", dir, PosixFilePermissions.toString(perms), dir);
                }
            }
        } catch (IOException | RuntimeException e) {
            // only a warning
        }
    }

    private static void writeCredentials(Path file, BrowserSession session) {
        try {
            if (Files.exists(file)) {
                log.info("replacing credentials file {} (left by an earlier run with session id {}?)", file,
                        session.id());
            }
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

    private Ingress start(IngressConfig config, String tokenValue, SslContext ssl, InetSocketAddress listenAddress) {
        try {
            return Ingress.start(config, () -> tokenValue, ssl);
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

    /** Ingress.start does not wait for the gateway; say so when the first attempt fails. */
    private void watchFirstConnection(Ingress running, URI gatewayUri) {
        Future<Void> first = running.firstConnection();
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
                    .addArgument(gatewayUri.getHost() + ":" + gatewayUri.getPort())
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
        log.atInfo().setMessage("shutdown signal received").addKeyValue("event", "stopping").log();
        int code = ExitCodes.OK;
        try {
            stop("signal");
        } catch (RuntimeException e) {
            log.error("shutdown failed: {}", e.toString());
            code = ExitCodes.INTERNAL;
        }
        if (IngressMain.standalone) {
            System.out.flush();
            System.err.flush();
            // The JVM would otherwise exit with 128+signal after the hooks; a clean stop is a clean exit.
            Runtime.getRuntime().halt(code);
        }
    }

    /**
     * Stops the ingress, deletes the credentials file and releases the thread blocked in {@link #call()}.
     * Idempotent and thread-safe; returns once stopped. Used by the shutdown hook and by tests.
     */
    void stop() {
        stop("stop");
    }

    private void stop(String reason) {
        Ingress toClose;
        Path toDelete;
        synchronized (lock) {
            if (stopRequested) {
                toClose = null;
                toDelete = null;
            } else {
                stopRequested = true;
                toClose = ingress;
                toDelete = credentialsFile;
            }
        }
        if (toClose != null) {
            shutdown(toClose, toDelete, reason);
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

    private void shutdown(Ingress running, Path credentials, String reason) {
        long t0 = System.nanoTime();
        try {
            // The credential first: nothing should pick it up for a proxy that is going away.
            try {
                Files.deleteIfExists(credentials);
            } catch (IOException e) {
                log.warn("cannot delete credentials file {} ({}); delete it by hand", credentials,
                        e.getClass().getSimpleName());
            }
            running.close();
        } finally {
            log.atInfo().setMessage("ingress stopped")
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

    /** Waits until the ingress is ready or {@link #call()} has ended (failed); true if that happened in time. */
    boolean awaitStarted(long timeout, TimeUnit unit) throws InterruptedException {
        return started.await(timeout, unit);
    }

    /** The running ingress, or null before start / after a failed start. */
    Ingress ingress() {
        synchronized (lock) {
            return ingress;
        }
    }
}
