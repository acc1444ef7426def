package dev.previewtunnel.ingress.ssh;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One connect attempt, in order: the ControlMaster (one authentication), the remote install, the gateway as the
 * child of one ssh channel ({@code serve --listen unix:SOCK --stdio-control}), the forward
 * {@code 127.0.0.1:P -> SOCK} on the master. {@link #close()} undoes all of it: the gateway's stdin closed (it drains
 * and exits, removing its socket), the master told to exit (its forwards go with it), every child stopped.
 */
final class LinkAttempt implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LinkAttempt.class);
    private static final Duration MASTER_BATCH = Duration.ofSeconds(45);
    /** With a terminal the user may be typing a passphrase or confirming a host key. */
    private static final Duration MASTER_INTERACTIVE = Duration.ofMinutes(3);
    private static final Duration GATEWAY_READY = Duration.ofSeconds(90);
    private static final Duration SHORT = Duration.ofSeconds(20);
    private static final Duration CALL = Duration.ofSeconds(10);

    private final LinkPlan plan;
    private final int number;
    private final SshCommand commands;
    private final AttemptProcesses procs = new AttemptProcesses();
    private final CompletableFuture<String> lost = new CompletableFuture<>();
    private volatile SshProcess master;
    private volatile SshProcess gateway;
    private volatile ControlChannel channel;
    private volatile String remoteSocket;
    private final AtomicBoolean closed = new AtomicBoolean();

    LinkAttempt(LinkPlan plan, int number) {
        this.plan = plan;
        this.number = number;
        this.commands = plan.commands();
    }

    /** Runs the whole sequence; returns the live control channel, or throws {@link SshLinkException} in words. */
    ControlChannel connect() {
        String host = plan.dest().shown();
        log.info("ssh: connecting to {}{}", host, number > 1 ? " (attempt " + number + ")" : "");
        startMaster();
        RemoteInstall.Installed installed = RemoteInstall.install(plan, procs);
        String socket = installed.facts().run() + "/gw-" + plan.linkId() + "-" + number + ".sock";
        if (socket.getBytes(StandardCharsets.UTF_8).length > 100) {
            throw new SshLinkException("the gateway socket path on " + host + " would be too long for a Unix socket ("
                    + socket + "): set a shorter XDG_RUNTIME_DIR or XDG_STATE_HOME there");
        }
        remoteSocket = socket;
        ControlChannel ch = startGateway(installed, socket);
        AttemptProcesses.Result fwd = procs.run("forward", commands.control("forward", "-L",
                "127.0.0.1:" + plan.localPort() + ":" + socket), null, SHORT);
        if (fwd.exit() != 0) {
            throw new SshLinkException("ssh could not forward 127.0.0.1:" + plan.localPort() + " to the gateway on "
                    + host + (fwd.errorLines().isEmpty() ? "" : ": " + fwd.errorLines()));
        }
        try {
            ch.ping(CALL).get(CALL.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new SshLinkException("the gateway on " + host + " did not answer its first ping ("
                    + (e instanceof TimeoutException ? "no answer" : cause.getMessage()) + ")" + gatewayWords());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SshLinkException("stopped");
        }
        return ch;
    }

    private void startMaster() {
        try {
            Files.deleteIfExists(plan.controlPath()); // a master killed with -9 leaves its socket behind
        } catch (IOException e) {
            throw new SshLinkException("cannot remove the stale ssh control socket " + plan.controlPath());
        }
        SshProcess m = procs.start("master", commands.master(), SshProcess.Stdout.DISCARD, null);
        master = m;
        m.process().onExit().thenRun(() -> lost.complete(masterWords()));
        long deadline = System.nanoTime() + (plan.batch() ? MASTER_BATCH : MASTER_INTERACTIVE).toNanos();
        while (!Files.exists(plan.controlPath())) {
            if (!m.alive() || System.nanoTime() > deadline) {
                m.await(Duration.ofSeconds(2));
                String why = m.errorLines();
                throw new SshLinkException("ssh to " + plan.dest().shown() + " failed"
                        + (why.isEmpty() ? (m.alive() ? " (no connection within the time limit)" : "") : ": " + why));
            }
            try {
                Thread.sleep(50); // ssh offers no readiness signal but the socket file (then -O check)
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SshLinkException("stopped");
            }
        }
        AttemptProcesses.Result check = procs.run("check", commands.control("check"), null, SHORT);
        if (check.exit() != 0) {
            throw new SshLinkException("the ssh master for " + plan.dest().shown() + " does not answer"
                    + (check.errorLines().isEmpty() ? "" : ": " + check.errorLines()));
        }
    }

    private ControlChannel startGateway(RemoteInstall.Installed installed, String socket) {
        String keys = installed.facts().state() + "/keys";
        String script = "exec " + installed.launcher() + " serve --env " + RemoteShell.quote(plan.setup().environment())
                + " --keys " + RemoteShell.quote(keys) + " --init-keys --listen " + RemoteShell.quote("unix:" + socket)
                + " --stdio-control";
        SshProcess g = procs.start("gateway", commands.remote(RemoteShell.sh(script)), SshProcess.Stdout.PIPE,
                plan.gatewayLog());
        gateway = g;
        ControlChannel ch = new ControlChannel(plan.dest().shown(), g.stdout(), g.stdin(), CALL);
        channel = ch;
        ch.ended().thenAccept(why -> {
            if (!closed.get()) {
                lost.complete(channelLoss(why));
            }
        });
        try {
            ch.ready().get(GATEWAY_READY.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            String why = ch.ended().getNow(null);
            throw new SshLinkException("the gateway on " + plan.dest().shown() + " did not start"
                    + (e instanceof TimeoutException ? " within " + GATEWAY_READY.toSeconds() + " s"
                    : why == null ? "" : " (" + why + ")") + gatewayWords());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SshLinkException("stopped");
        }
        return ch;
    }

    /**
     * A dead master takes the gateway's channel with it (its exit may be seen a moment later): then the connection
     * is what ended, not the gateway, whose last log line would mislead.
     */
    private String channelLoss(String why) {
        try {
            if (master.process().waitFor(500, TimeUnit.MILLISECONDS)) {
                return masterWords();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return why + gatewayWords();
    }

    private String masterWords() {
        SshProcess m = master;
        m.drained(Duration.ofMillis(500));
        String lines = m.errorLines();
        return "the ssh connection ended" + (lines.isEmpty() ? "" : ": " + lines);
    }

    /** "; gateway: LAST LINES" from the gateway's stderr (its log), or nothing. */
    private String gatewayWords() {
        SshProcess g = gateway;
        if (g == null) {
            return "";
        }
        if (!g.alive()) {
            g.drained(Duration.ofSeconds(1));
        }
        String lines = g.errorLines();
        return lines.isEmpty() ? "" : "; gateway: " + lines;
    }

    /** Completes with the reason in words when the master exits or the gateway's channel ends. */
    CompletableFuture<String> lost() {
        return lost;
    }

    int number() {
        return number;
    }

    String remoteSocket() {
        return remoteSocket;
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        ControlChannel ch = channel;
        if (ch != null) {
            ch.end("closed");
        }
        SshProcess g = gateway;
        if (g != null) {
            g.await(Duration.ofSeconds(5)); // stdin closed: the remote gateway drains, exits, its channel closes
        }
        SshProcess m = master;
        if (m != null && m.alive()) {
            try {
                procs.run("exit", commands.control("exit"), null, Duration.ofSeconds(5));
            } catch (SshLinkException stoppedMeanwhile) {
                // a concurrent close got here first: procs.close() below stops the master
            }
        }
        procs.close();
        try {
            Files.deleteIfExists(plan.controlPath());
        } catch (IOException e) {
            log.debug("ssh: cannot remove {}: {}", plan.controlPath(), e.toString());
        }
    }
}
