package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.cli.AuditDestination;
import dev.previewtunnel.cli.ConsoleLogging;
import dev.previewtunnel.cli.LogFormat;
import dev.previewtunnel.cli.LogOptions;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.ServiceRunner;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.cli.SettingsProvider;
import dev.previewtunnel.cli.StateDirectory;
import dev.previewtunnel.cli.StateLock;
import dev.previewtunnel.ingress.browser.BrowserLauncher;
import dev.previewtunnel.ingress.open.OpenSession;
import dev.previewtunnel.ingress.session.StateFiles;
import dev.previewtunnel.ingress.ssh.RemoteSetup;
import dev.previewtunnel.ingress.ssh.SshDestination;
import dev.previewtunnel.local.audit.AuditLog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code open}: one command from a dev server on an SSH host to a browser page (issue 19). Wires the parts
 * together and prints the open line; {@link OpenSession} does the work, {@link ServiceRunner} the stop.
 */
@Command(name = "open",
        mixinStandardHelpOptions = true,
        defaultValueProvider = IngressSettingsProvider.class,
        versionProvider = IngressVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  desktop-ingress open ssh://dev.example.com --port 5173",
                "  desktop-ingress open ssh://me@10.0.0.5:2222 --port auto \\",
                "      --identity ~/.ssh/id_ed25519",
                "  desktop-ingress open ssh://devbox --port 5173 --no-browser"},
        sortOptions = false,
        description = {
                "Open a dev server that listens on an SSH host's loopback in a browser on this desktop: "
                        + "desktop-ingress open ssh://[USER@]HOST[:PORT] --port 5173.",
                "Connects with the system ssh client (your ~/.ssh/config, agent, ProxyJump and known hosts apply), "
                        + "starts env-gateway on the host (from its PATH, else this version's jar, uploaded once "
                        + "to ~/.cache/preview-tunnel/VERSION/ and checked by SHA-256; the host needs only Java "
                        + "17+), reaches it through the SSH connection (it listens on nothing but an owner-only "
                        + "Unix socket), mints this browser session's grants over SSH and renews them before they "
                        + "expire, and reconnects with backoff when SSH drops.",
                "Starts Chromium or Chrome (on PATH, or --browser) with a profile of its own per host and "
                        + "session under STATE_DIR/browser-profiles/ and answers the proxy's credential itself; nothing is "
                        + "typed or shown. http://preview.localhost/ in that browser is the status page: the "
                        + "previews, the SSH link, grant expiries, recent errors, and ports that started listening "
                        + "later, each with an Open button.",
                "Prints one JSON line on stdout once the first page can be loaded: event (\"open\"), urls, proxy "
                        + "(HOST:PORT), session, host (and credentialsFile with --no-browser). Runs until SIGINT or "
                        + "SIGTERM, or until the browser it started exits; then stops everything it started here "
                        + "and on the host."})
final class OpenCommand implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(OpenCommand.class);
    static final Set<String> CONFIG_KEYS = SettingsProvider.keysOf(new OpenCommand(),
            IngressSettingsProvider.NOT_SETTINGS);

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "ssh://[USER@]HOST[:PORT]",
            description = "The SSH host whose loopback the dev server listens on.")
    String destination;

    @Option(names = "--port", paramLabel = "N|auto", required = true,
            description = "A port the dev server listens on at the host's loopback (repeatable), or auto: every "
                    + "port your SSH user listens on there (none yet: the status page opens them as they start).")
    List<String> ports = new ArrayList<>();

    @Option(names = "--config", paramLabel = "FILE",
            description = "JSON config file with these options' names as keys (default: $PTUN_INGRESS_CONFIG).")
    Path config;

    @Mixin
    SshTargetOptions target = new SshTargetOptions();

    @Option(names = "--browser", paramLabel = "PATH",
            description = "Chromium or Chrome to start (default: chromium, chromium-browser, google-chrome, "
                    + "google-chrome-stable or chrome on PATH).")
    Path browser;

    @Option(names = "--browser-arg", paramLabel = "ARG",
            description = "An extra argument for the browser, repeatable (e.g. --browser-arg=--headless).")
    List<String> browserArgs = new ArrayList<>();

    @Option(names = "--no-browser",
            description = "Start no browser: the open line then names the proxy and the owner-only credentials "
                    + "file to configure a browser profile of your own with (docs/desktop-ingress.md).")
    Boolean noBrowser;

    @Option(names = "--session", paramLabel = "NAME", defaultValue = "default",
            description = "The browser session's name (its profile is kept per host and name; default: default).")
    String session;

    @Option(names = "--grant-ttl", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            defaultValue = "10m",
            description = "Lifetime of each grant minted on the host; renewed at half of it; 10s to 24h, at most "
                    + "the gateway's --max-grant-lifetime (default: 10m).")
    Duration grantTtl;

    @Option(names = "--listen", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:0",
            description = "Where the proxy listens, loopback only (default: 127.0.0.1:0, a free port).")
    String listen;

    @Option(names = "--audit-file", paramLabel = "FILE",
            description = "Append the audit events to this owner-only file, or write them to stderr with - "
                    + "(default: STATE_DIR/audit.jsonl).")
    String auditFile;

    @Mixin
    LogOptions logOptions = new LogOptions();

    private final ServiceRunner runner = new ServiceRunner(log, "open", () -> IngressMain.standalone);

    private ConsoleLogging logging; // set by call() before run()

    @Override
    public Integer call() {
        // Closed after the runner's last line ("open stopped"), so that line is in the chosen format too.
        try (ConsoleLogging applied = logOptions.apply()) {
            logging = applied;
            return runner.call(this::run);
        }
    }

    private int run() {
        Settings s = SettingsProvider.settings(spec, config, IngressCli.ENV_PREFIX, CONFIG_KEYS);
        SshDestination dest;
        try {
            dest = SshDestination.parse(destination);
        } catch (IllegalArgumentException e) {
            throw Cli.usage(spec, e.getMessage());
        }
        List<Integer> portList = ports(s.list("port", ports, Settings::text));
        String sessionId = IngressCli.sessionId(spec, "--session", session);
        Duration ttl = s.inRange("grant-ttl", grantTtl, Duration.ofSeconds(10), Duration.ofHours(24));
        InetSocketAddress listenAddress = s.loopbackListen(spec, "listen", listen, 0);
        Path dir = target.stateDir();
        boolean withBrowser = noBrowser == null || !noBrowser;
        OpenSession.Browser browserToStart = null;
        if (withBrowser) {
            try {
                browserToStart = new OpenSession.Browser(BrowserLauncher.find(browser),
                        s.list("browser-arg", browserArgs, Settings::text));
            } catch (IllegalStateException | IllegalArgumentException e) {
                throw new CliException(ExitCodes.USAGE, e.getMessage());
            }
        }
        RemoteSetup remote = target.remote(dest);
        // One open per host and state directory: the host's directory (credentials, the remote gateway's log)
        // and browser profiles are its own. Other hosts open side by side.
        StateDirectory.prepare(dir, "the browser profiles");
        Path hostDir = OpenSession.hostDir(dir, dest);
        StateDirectory.prepare(hostDir, "the credentials file");
        runner.open(StateLock.acquire(hostDir, "desktop-ingress open of " + dest.shown(),
                "give this one another --state-dir"));
        // The host's directory, which the lock above makes this process' own (the rotation is single-process).
        runner.open(AuditDestination.apply(s, AuditLog.LOGGER, auditFile, hostDir));
        OpenSession.Config cfg = new OpenSession.Config(dest, target.ssh(s), remote, dir, sessionId, portList, ttl,
                listenAddress, browserToStart, target.connectTimeout);
        OpenSession session = OpenSession.of(cfg);
        // A signal while opening must still stop the ssh processes (and with them the remote gateway): the
        // runner's own hook is installed only once serving.
        Thread early = new Thread(session::close, "ptun-open-early-stop");
        Runtime.getRuntime().addShutdownHook(early);
        try {
            session.start();
        } catch (OpenSession.OpenException e) {
            throw new CliException(ExitCodes.UNREACHABLE, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException(ExitCodes.INTERNAL, "interrupted while opening");
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(early);
            } catch (IllegalStateException e) {
                // shutting down: the hook runs
            }
        }
        runner.open(session);
        Path credentials = withBrowser ? null : writeCredentials(hostDir, session);
        runner.serve("ptun-open-shutdown", () -> {
            ObjectNode line = Cli.json().put("event", "open");
            ArrayNode urls = line.putArray("urls");
            session.urls().forEach(u -> urls.add(u.toString()));
            line.put("proxy", Cli.hostPort(session.proxyAddress()))
                    .put("session", session.session().id())
                    .put("host", dest.shown());
            if (credentials != null) {
                line.put("credentialsFile", credentials.toString());
            }
            Cli.printJson(line);
            // stdout keeps its one JSON line for scripts in both formats; these lines are for the person.
            String proxy = Cli.hostPort(session.proxyAddress());
            log.atInfo().setMessage("open: {} on {} through the proxy {} (session {}); stop with Ctrl-C{}")
                    .addArgument(session.urls().stream().map(Object::toString).collect(Collectors.joining(" ")))
                    .addArgument(dest.shown()).addArgument(proxy).addArgument(session.session().id())
                    .addArgument(credentials == null ? " or by closing the browser" : "")
                    .log();
            if (credentials != null) {
                String browser = BrowserHint.command(proxy, session.urls().get(0).toString());
                if (logging.format() == LogFormat.TEXT) {
                    log.info("no browser started: start a browser profile of its own with the line below and give "
                            + "it the username and password in {}", credentials);
                    logging.plainLine(browser);
                } else {
                    log.info("no browser started: point a browser profile of its own at the proxy http://{} "
                            + "(e.g. {}) with the username and password in {}", proxy, browser, credentials);
                }
            }
            session.browserExited().thenRun(() -> {
                log.info("open: the browser exited; stopping");
                Thread t = new Thread(runner::stop, "ptun-open-browser-exit");
                t.setDaemon(true);
                t.start();
            });
        });
        return ExitCodes.OK;
    }

    /** --port values: each a port, or one {@code auto} (an empty list: discover on the host). */
    private List<Integer> ports(List<String> given) {
        List<Integer> out = new ArrayList<>();
        boolean auto = false;
        for (String p : given) {
            if ("auto".equals(p.toLowerCase(Locale.ROOT))) {
                auto = true;
                continue;
            }
            try {
                int port = Integer.parseInt(p);
                if (port < 1 || port > 65535) {
                    throw new NumberFormatException();
                }
                if (!out.contains(port)) {
                    out.add(port);
                }
            } catch (NumberFormatException e) {
                throw Cli.usage(spec, "--port takes a port 1 to 65535 or auto, got '" + Cli.shown(p) + "'");
            }
        }
        if (auto && !out.isEmpty()) {
            throw Cli.usage(spec, "--port auto opens every listening port; do not combine it with port numbers");
        }
        return out;
    }

    /** --no-browser: the credential goes to an owner-only file, deleted at stop (never printed). */
    private Path writeCredentials(Path dir, OpenSession session) {
        try {
            StateDirectory.prepare(dir, "the credentials file");
            Path file = StateFiles.writeCredentials(dir, session.session());
            runner.open(() -> ServiceRunner.deleteQuietly(log, file));
            return file.toAbsolutePath();
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot write the credentials file in " + dir + " ("
                    + e.getClass().getSimpleName() + ")");
        }
    }
}
