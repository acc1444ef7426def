package dev.previewtunnel.ingress.ssh;

import dev.previewtunnel.ingress.tunnel.ReconnectBackoff;
import dev.previewtunnel.local.files.OwnerOnlyFiles;
import dev.previewtunnel.mux.wire.MuxProtocol;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A remote gateway reached with the system {@code ssh} (issue 19, items 1-3): a local {@code ws://} URI that stays
 * the same for the link's life, and a control channel that mints tokens and grants on the remote. A lost link (the
 * master exits, the gateway's channel ends, or a ping is unanswered for 15 s) is torn down completely and the whole
 * sequence retried with backoff until {@link #close()}; only the first attempt's failure is final.
 *
 * <p>Attempts run one at a time on the link's own thread (they block on child processes); callers and listeners
 * never wait on it.
 */
public final class SshLink implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(SshLink.class);
    private static final Duration PING_EVERY = Duration.ofSeconds(5);
    private static final Duration PING_DEADLINE = Duration.ofSeconds(15);
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(15);

    public enum State { CONNECTING, UP, RECONNECTING, CLOSED }

    /** {@code attempt}: the current or last attempt's number; {@code nextRetry}: when RECONNECTING, else null. */
    public record Status(State state, int attempt, Instant nextRetry, String lastError) {
    }

    /** Told on the link's thread; must not block. */
    public interface Listener {
        void up(GatewayControl control);

        void down(String why);
    }

    private final LinkPlan plan;
    private final Listener listener;
    private final URI gatewayUri;
    private final LinkControl control;
    private final ScheduledExecutorService thread;
    private final ReconnectBackoff backoff = new ReconnectBackoff(Duration.ofMillis(500), Duration.ofSeconds(15),
            bound -> ThreadLocalRandom.current().nextLong(bound));
    private final CompletableFuture<Void> firstUp = new CompletableFuture<>();
    private volatile Status status = new Status(State.CONNECTING, 0, null, null);
    private LinkAttempt current; // guarded by this
    private ScheduledFuture<?> pinger; // link thread only
    private boolean closed; // guarded by this

    private SshLink(LinkPlan plan, Listener listener) {
        this.plan = plan;
        this.listener = listener;
        this.gatewayUri = URI.create("ws://127.0.0.1:" + plan.localPort() + MuxProtocol.DEFAULT_PATH);
        this.control = new LinkControl(plan.dest().shown(), () -> status.state().name().toLowerCase());
        ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
            Thread th = new Thread(r, "ssh-link-" + plan.dest().key());
            th.setDaemon(true);
            return th;
        });
        t.setRemoveOnCancelPolicy(true);
        this.thread = t;
    }

    /**
     * Starts connecting in the background and returns at once; {@link #firstUp()} says how the first attempt went.
     * {@code stateDir}: the desktop's state directory (the control socket under {@code ssh/}, the remote gateway's
     * log in {@code remote-gateway.log}, both owner-only). Throws {@link SshLinkException} at once only for what is
     * wrong here (the jar unreadable, no owner-only place for the control socket).
     */
    public static SshLink start(SshDestination dest, SshOptions ssh, RemoteSetup setup, Path stateDir,
                                Listener listener) {
        String linkId = HexFormat.of().formatHex(new SecureRandom().generateSeed(4));
        Path controlPath = ControlSocketPath.choose(stateDir, linkId);
        try {
            OwnerOnlyFiles.ensureDirectory(stateDir);
        } catch (IOException e) {
            throw new SshLinkException("cannot create the state directory " + stateDir + ": " + e.getMessage(), e);
        }
        String sha = setup.gatewayJar() == null ? "" : LinkPlan.sha256(setup.gatewayJar());
        boolean batch = !hasTerminal();
        LinkPlan plan = new LinkPlan(dest, ssh, setup, controlPath, stateDir.resolve("remote-gateway.log"),
                freeLoopbackPort(), linkId, batch, sha);
        SshLink link = new SshLink(plan, listener);
        link.thread.execute(link::attempt);
        return link;
    }

    /** {@code ws://127.0.0.1:P/tunnel}: the local end of the forward; the same for the link's whole life. */
    public URI gatewayUri() {
        return gatewayUri;
    }

    /** The control channel of whichever remote gateway is current; calls fail at once while the link is down. */
    public GatewayControl control() {
        return control;
    }

    public Status status() {
        return status;
    }

    /** Completes once the gateway first answered; fails with the first attempt's {@link SshLinkException}. */
    public CompletableFuture<Void> firstUp() {
        return firstUp;
    }

    /** The current gateway's Unix socket path on the remote (null before the first attempt got that far). */
    public String remoteSocket() {
        synchronized (this) {
            return current == null ? null : current.remoteSocket();
        }
    }

    private void attempt() {
        LinkAttempt a;
        synchronized (this) {
            if (closed) {
                return;
            }
            a = new LinkAttempt(plan, status.attempt() + 1);
            current = a;
        }
        status = new Status(firstUp.isDone() ? State.RECONNECTING : State.CONNECTING, a.number(), null,
                status.lastError());
        ControlChannel ch;
        try {
            ch = a.connect();
        } catch (RuntimeException e) {
            a.close();
            failed(a, e instanceof SshLinkException ? e.getMessage() : "unexpected: " + e);
            return;
        }
        synchronized (this) {
            if (closed) {
                return; // close() stops this attempt
            }
        }
        backoff.reset();
        control.use(ch);
        status = new Status(State.UP, a.number(), null, status.lastError());
        log.info("ssh: gateway up on {} ({} -> {})", plan.dest().shown(), gatewayUri, a.remoteSocket());
        firstUp.complete(null);
        a.lost().thenAccept(why -> thread.execute(() -> lost(a, why)));
        pinger = thread.scheduleWithFixedDelay(() -> ch.ping(PING_DEADLINE).whenComplete((ok, e) -> {
            if (e != null && ch.open()) {
                thread.execute(() -> lost(a, "the gateway did not answer a ping for " + PING_DEADLINE.toSeconds()
                        + " s"));
            }
        }), PING_EVERY.toMillis(), PING_EVERY.toMillis(), TimeUnit.MILLISECONDS);
        notify(() -> listener.up(control));
    }

    private void lost(LinkAttempt a, String why) {
        synchronized (this) {
            if (closed || current != a) {
                return; // a second report of the same loss (a failed ping, then the channel end it causes)
            }
            current = null;
        }
        if (pinger != null) {
            pinger.cancel(false);
        }
        control.use(null);
        notify(() -> listener.down(why));
        a.close();
        retry("link lost", why);
    }

    private void failed(LinkAttempt a, String why) {
        synchronized (this) {
            if (closed || current != a) {
                return;
            }
            current = null;
        }
        if (!firstUp.isDone()) {
            log.warn("ssh: {}", why);
            status = new Status(State.CLOSED, a.number(), null, why);
            firstUp.completeExceptionally(new SshLinkException(why));
            close();
            return;
        }
        retry("reconnect failed", why);
    }

    private void retry(String what, String why) {
        long delay = backoff.nextDelayMillis();
        status = new Status(State.RECONNECTING, status.attempt(), Instant.now().plusMillis(delay), why);
        log.warn("ssh: {} ({}), retry in {}", what, why, delay < 1000 ? delay + " ms" : (delay + 500) / 1000 + " s");
        thread.schedule(this::attempt, delay, TimeUnit.MILLISECONDS);
    }

    private void notify(Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            log.warn("ssh: a link listener failed: {}", e.toString());
        }
    }

    /**
     * Stops everything, idempotent and bounded: the remote gateway's stdin closed (it exits and removes its socket),
     * the master told to exit (forwards and control socket gone), every ssh child stopped.
     */
    @Override
    public void close() {
        LinkAttempt a;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            a = current;
        }
        control.use(null);
        if (a != null) {
            a.close();
        }
        thread.shutdownNow();
        if (!Thread.currentThread().getName().startsWith("ssh-link-")) {
            try {
                thread.awaitTermination(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        Status s = status;
        status = new Status(State.CLOSED, s.attempt(), null, s.lastError());
        firstUp.completeExceptionally(new SshLinkException("the SSH link to " + plan.dest().shown() + " was closed"));
        log.info("ssh: link to {} closed", plan.dest().shown());
    }

    /**
     * ssh prompts (passphrase, password, a new host key) on the controlling terminal, /dev/tty, never on our stdin:
     * with one the master may prompt (no BatchMode; stdout may still be a pipe, {@code open ... | jq}); without one
     * (a service, CI) BatchMode=yes makes it fail at once with its own line instead of waiting for askpass.
     */
    private static boolean hasTerminal() {
        try (RandomAccessFile tty = new RandomAccessFile("/dev/tty", "rw")) {
            return true;
        } catch (IOException | SecurityException e) {
            return false;
        }
    }

    private static int freeLoopbackPort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new SshLinkException("no free local port for the gateway forward: " + e.getMessage(), e);
        }
    }
}
