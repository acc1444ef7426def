package dev.previewtunnel.ingress.open;

import dev.previewtunnel.cli.ServiceRunner;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.browser.BrowserLauncher;
import dev.previewtunnel.ingress.browser.LaunchedBrowser;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.ssh.GatewayControl;
import dev.previewtunnel.ingress.ssh.RemotePort;
import dev.previewtunnel.ingress.ssh.RemoteSetup;
import dev.previewtunnel.ingress.ssh.SshDestination;
import dev.previewtunnel.ingress.ssh.SshLink;
import dev.previewtunnel.ingress.ssh.SshLinkException;
import dev.previewtunnel.ingress.ssh.SshOptions;
import dev.previewtunnel.mux.wire.TunnelError;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One {@code desktop-ingress open}: the SSH link and its remote gateway, the proxy with one browser session, the
 * session's grants minted over the link and kept renewed, and (unless told not to) the browser. Started step by
 * step; each step's resource is closed in reverse at {@link #close()}, so a failure halfway leaves nothing running
 * here or on the remote (issue 19).
 */
public final class OpenSession implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(OpenSession.class);
    /** The connection token's lifetime; minted again at every (re)connect and at half this. */
    private static final Duration TOKEN_TTL = Duration.ofHours(12);
    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(60);

    /** What to open; {@code ports} empty means every listener of the SSH user on the remote ({@code --port auto}). */
    public record Config(SshDestination destination, SshOptions ssh, RemoteSetup remote, Path stateDir,
                         String sessionId, List<Integer> ports, Duration grantTtl, InetSocketAddress listen,
                         Browser browser, Duration firstConnectTimeout) {
    }

    /** The browser to start: {@code binary} as found by {@link BrowserLauncher#find}. */
    public record Browser(Path binary, List<String> extraArgs) {
    }

    private final Config config;
    private final Deque<AutoCloseable> opened = new ArrayDeque<>();
    private final AtomicReference<String> token = new AtomicReference<>();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(
            new DefaultThreadFactory("ptun-open-timer", true));
    private final CompletableFuture<Void> browserExited = new CompletableFuture<>();
    private volatile SshLink link;
    private volatile Ingress ingress;
    private volatile BrowserSession session;
    private volatile List<URI> urls = List.of();
    private boolean closed; // guarded by this

    private OpenSession(Config config) {
        this.config = config;
        opened.push(timer::shutdownNow);
    }

    /** Nothing is started yet: {@link #start()} does; {@link #close()} may come at any time, from any thread. */
    public static OpenSession of(Config config) {
        return new OpenSession(config);
    }

    /**
     * Opens everything; returns once the first page can be loaded (the link up, the grants attached, a tunnel
     * connection open, the browser started). On failure, closes what it opened and throws.
     */
    public void start() throws InterruptedException {
        try {
            startAll();
        } catch (RuntimeException | InterruptedException | Error e) {
            close();
            throw e;
        }
    }

    /** Registers a started resource for {@link #close()}; when closed meanwhile, closes it at once instead. */
    private synchronized <T extends AutoCloseable> T own(T resource) {
        if (closed) {
            closeQuietly(resource);
            throw new OpenException("stopped while opening");
        }
        opened.push(resource);
        return resource;
    }

    private void startAll() throws InterruptedException {
        Path hostDir = hostDir(config.stateDir(), config.destination());
        String host = config.destination().shown();
        log.info("open: connecting to {} over ssh", host);
        SshLink l;
        try {
            l = SshLink.start(config.destination(), config.ssh(), config.remote(), hostDir, listener(host));
        } catch (SshLinkException e) {
            throw new OpenException(e.getMessage());
        }
        link = own(l);
        await(l.firstUp(), config.firstConnectTimeout(), "connecting to " + host + " over ssh");
        token.set(await(l.control().token(TOKEN_TTL), STEP_TIMEOUT, "minting the connection token on " + host));
        timer.scheduleWithFixedDelay(() -> mintToken(link.control()), TOKEN_TTL.toMinutes() / 2,
                TOKEN_TTL.toMinutes() / 2, TimeUnit.MINUTES);

        IngressConfig ic = IngressConfig.defaults(config.listen(), l.gatewayUri());
        // No token while the link is down: the forward's local port is free then, and whatever takes it must get
        // neither the token nor a browser's request (TunnelDial dials nothing without one).
        Ingress in = ServiceRunner.listen(() -> Ingress.start(ic,
                () -> l.status().state() == SshLink.State.UP ? token.get() : null, null), "", config.listen());
        ingress = in;
        own(() -> in.close(Duration.ofSeconds(2), Duration.ofMillis(500)));
        BrowserSession s = BrowserSession.create(config.sessionId());
        session = s;
        in.sessions().add(s);
        GrantRenewals r = new GrantRenewals(s, (sid, target, ttl) -> link.control().grant(sid, target, ttl),
                config.grantTtl(), GrantRenewals.Timer.of(timer));
        own(r);
        in.grantRefresher((sid, target, grantId, why) -> why == TunnelError.GRANT_EXPIRED && sid.equals(s.id())
                ? r.renewNow(target)
                : CompletableFuture.failedFuture(new IllegalStateException("not renewed: " + why.code())));
        in.frontDoor(new SshFrontDoor(host, s.id(), l, r, Set.of(in.proxyAddress().getPort(),
                l.gatewayUri().getPort())));

        // The browser starts while the grants are minted and the first tunnel connection comes up: its own start
        // (a second or so) is then off the path to the first page; it navigates once the tunnel is up.
        CompletableFuture<LaunchedBrowser> browser = config.browser() == null ? null
                : CompletableFuture.supplyAsync(() -> own(BrowserLauncher.launch(config.browser().binary(),
                        BrowserLauncher.profileDir(config.stateDir(), config.destination().key(), s.id()),
                        in.proxyAddress(), s.username(), s.password(), config.browser().extraArgs(), List.of(),
                        STEP_TIMEOUT)), runnable -> new Thread(runnable, "ptun-open-browser").start());
        List<Integer> ports = config.ports().isEmpty()
                ? discover(l, Set.of(in.proxyAddress().getPort(), l.gatewayUri().getPort())) : config.ports();
        List<URI> opening = new ArrayList<>();
        for (int port : ports) {
            await(r.keep(target(port)), STEP_TIMEOUT, "minting the grant for port " + port + " on " + host);
            opening.add(url(port));
        }
        urls = opening.isEmpty() ? List.of(URI.create("http://preview.localhost/")) : List.copyOf(opening);
        await(in.firstConnection(), STEP_TIMEOUT, "opening the tunnel to " + host);
        if (browser != null) {
            LaunchedBrowser b = await(browser, STEP_TIMEOUT.multipliedBy(2), "starting the browser");
            b.exited().whenComplete((code, e) -> browserExited.complete(null));
            try {
                b.open(urls);
            } catch (RuntimeException e) {
                throw new OpenException("the browser did not open " + urls.get(0) + " (" + e.getMessage()
                        + "); its output is in " + BrowserLauncher.profileDir(config.stateDir(),
                        config.destination().key(), s.id()).resolve(BrowserLauncher.LOG_FILE));
            }
        }
    }

    /** The link's ups and downs: a fresh token at each up, the loss in the log (the pages say it in words). */
    private SshLink.Listener listener(String host) {
        return new SshLink.Listener() {
            @Override
            public void up(GatewayControl control) {
                mintToken(control);
            }

            @Override
            public void down(String why) {
                log.atWarn().setMessage("open: SSH link to {} lost ({}); reconnecting").addArgument(host)
                        .addArgument(why).addKeyValue("event", "ssh_down").log();
            }
        };
    }

    /** Every listener of the SSH user on the remote; none is fine: the status page opens them as they start. */
    private static List<Integer> discover(SshLink l, Set<Integer> own) throws InterruptedException {
        List<RemotePort> found = await(l.control().ports(), STEP_TIMEOUT, "listing the remote's ports");
        List<Integer> ports = found.stream().map(RemotePort::port).filter(p -> !own.contains(p))
                .distinct().sorted().toList();
        if (ports.isEmpty()) {
            log.info("open: nothing of yours listens on the remote's loopback yet; the status page "
                    + "http://preview.localhost/ opens a port once it listens");
        }
        return ports;
    }

    private void mintToken(GatewayControl control) {
        control.token(TOKEN_TTL).whenComplete((t, e) -> {
            if (t != null) {
                token.set(t);
            } else if (e != null) {
                log.warn("open: minting a new connection token failed ({}); the current one stays in use",
                        e.getMessage());
            }
        });
    }

    /** What {@code open} and {@code ports} keep per host: the ssh control socket, the remote gateway's log. */
    public static Path hostDir(Path stateDir, SshDestination destination) {
        return stateDir.resolve("open").resolve(destination.key());
    }

    static String target(int port) {
        return "localhost:" + port;
    }

    static URI url(int port) {
        return URI.create("http://localhost:" + port + "/");
    }

    /** Waits for a step; its failure becomes an {@link OpenException} in words. */
    private static <T> T await(java.util.concurrent.Future<T> step, Duration timeout, String what)
            throws InterruptedException {
        try {
            return step.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            step.cancel(true);
            throw new OpenException(what + " took longer than " + timeout.toSeconds() + " s");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof SshLinkException) {
                throw new OpenException(cause.getMessage());
            }
            throw new OpenException(what + " failed: " + (cause.getMessage() == null
                    ? cause.getClass().getSimpleName() : cause.getMessage()));
        }
    }

    public List<URI> urls() {
        return urls;
    }

    public InetSocketAddress proxyAddress() {
        return ingress.proxyAddress();
    }

    public BrowserSession session() {
        return session;
    }

    /** Completes when the browser this session started exits (never without one). */
    public CompletableFuture<Void> browserExited() {
        return browserExited;
    }

    /** Closes the browser, the renewals, the proxy (short drain) and the link (the remote gateway exits). */
    @Override
    public synchronized void close() {
        closed = true;
        while (!opened.isEmpty()) {
            closeQuietly(opened.pop());
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            log.warn("open: closing {} failed: {}", c.getClass().getSimpleName(), e.toString());
        }
    }

    /** A step of {@link #start} failed; the message is one line in words, never a secret. */
    public static final class OpenException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        OpenException(String message) {
            super(message, null, false, false);
        }
    }
}
