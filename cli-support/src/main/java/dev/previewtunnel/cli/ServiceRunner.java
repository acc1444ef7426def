package dev.previewtunnel.cli;

import io.netty.channel.ChannelException;
import org.slf4j.Logger;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;

/**
 * Runs a command that serves until SIGTERM/SIGINT ({@code env-gateway serve}, {@code desktop-ingress run}): the
 * body opens its resources with {@link #open}, then {@link #serve} prints the ready line, installs the shutdown
 * hook and blocks. The first stop (signal, {@link #stop()}, or the body failing) closes every opened resource
 * exactly once, in reverse order of opening; later stops wait for it. Whatever happens, nobody waiting for start
 * or stop waits forever. Tests run the command on a thread and call {@link #stop()} instead of a signal. Under
 * systemd ({@code Type=notify}) it sends READY=1 after the ready line and STOPPING=1 when the stop begins
 * ({@link SystemdNotify}).
 */
public final class ServiceRunner {
    private final Logger log;
    private final String what;
    private final BooleanSupplier standalone;
    private SystemdNotify notify; // guarded by lock; read from the environment at the first use (below)
    private final CountDownLatch started = new CountDownLatch(1);
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final Object lock = new Object();
    private final Deque<AutoCloseable> opened = new ArrayDeque<>(); // guarded by lock
    private boolean serving; // guarded by lock
    private boolean stopRequested; // guarded by lock
    private boolean closed; // guarded by lock

    /**
     * @param what       the service in log lines: {@code gateway} logs "gateway stopped"
     * @param standalone true when run as the main program: a signal's stop then halts with 0 (4 if it failed)
     */
    public ServiceRunner(Logger log, String what, BooleanSupplier standalone) {
        this(log, what, standalone, null);
    }

    /**
     * As above, telling systemd through {@code notify} (READY=1 once announced, STOPPING=1 at the stop); null reads
     * NOTIFY_SOCKET when first needed, not here: every command object builds a runner, and a short command run
     * under a service's environment must not warn about the socket.
     */
    ServiceRunner(Logger log, String what, BooleanSupplier standalone, SystemdNotify notify) {
        this.log = log;
        this.what = what;
        this.standalone = standalone;
        this.notify = notify;
    }

    /**
     * Runs the command's body; afterwards (normally or not) closes what is still open and releases everyone
     * waiting for start or stop.
     */
    public int call(IntSupplier body) {
        try {
            return body.getAsInt();
        } finally {
            closeAll(null); // a body that failed before serving: what it opened, in reverse, without a "stopped"
            started.countDown();
            stopped.countDown();
        }
    }

    /**
     * Registers {@code resource} to be closed at stop, after everything opened later; returns it. Null (a
     * resource not in use, e.g. no audit file) registers nothing.
     */
    public <T extends AutoCloseable> T open(T resource) {
        if (resource == null) {
            return null;
        }
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException("opened after the stop");
            }
            opened.push(resource);
        }
        return resource;
    }

    /**
     * The service is up: unless a stop came while it started, runs {@code announce} (the ready line), installs the
     * shutdown hook on a thread named {@code hookName} and blocks until stopped.
     */
    public void serve(String hookName, Runnable announce) {
        boolean stopNow;
        synchronized (lock) {
            stopNow = stopRequested;
            serving = !stopNow;
        }
        if (stopNow) { // stop() came while starting: it left the closing to this thread
            shutdown("stop requested during start");
            return;
        }
        Thread hook = new Thread(this::onSignal, hookName);
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            announce.run();
            notifier().ready(what + " serving");
            started.countDown();
            awaitStopped();
        } finally {
            stop(); // no-op when already stopped; closes everything if announcing or waiting failed
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // JVM shutting down: the hook is what stopped us.
            }
        }
    }

    /**
     * Stops the service and returns once it is stopped. Idempotent and thread-safe: the first call closes what is
     * open (or, before the service is up, leaves that to the starting thread); the others wait.
     */
    public void stop() {
        stop("stop");
    }

    private void stop(String reason) {
        boolean closeHere;
        synchronized (lock) {
            closeHere = !stopRequested && serving;
            stopRequested = true;
        }
        if (closeHere) {
            shutdown(reason);
        }
        awaitStoppedUninterruptibly();
    }

    /** True once a stop was requested (by a signal, {@link #stop()} or the end of {@link #serve}). */
    public boolean stopping() {
        synchronized (lock) {
            return stopRequested;
        }
    }

    /** Waits until the service is ready or {@link #call} has ended (failed); true if that happened in time. */
    public boolean awaitStarted(long timeout, TimeUnit unit) throws InterruptedException {
        return started.await(timeout, unit);
    }

    private SystemdNotify notifier() {
        synchronized (lock) {
            if (notify == null) {
                notify = SystemdNotify.fromEnvironment();
            }
            return notify;
        }
    }

    private void shutdown(String reason) {
        long t0 = System.nanoTime();
        notifier().stopping(what + " draining (" + reason + ")");
        try {
            closeAll(reason);
        } finally {
            log.atInfo().setMessage(what + " stopped")
                    .addKeyValue("event", "stopped")
                    .addKeyValue("reason", reason)
                    .addKeyValue("millis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0))
                    .log();
            stopped.countDown();
        }
    }

    /** Closes every opened resource once, last opened first; a failure is logged and the rest still close. */
    private void closeAll(String reason) {
        RuntimeException failure = null;
        while (true) {
            AutoCloseable next;
            synchronized (lock) {
                closed = true;
                next = opened.poll();
            }
            if (next == null) {
                break;
            }
            try {
                next.close();
            } catch (Exception e) {
                if (reason == null) {
                    log.warn("closing after a failed start: {}", e.toString());
                } else if (failure == null) {
                    failure = e instanceof RuntimeException r ? r : new IllegalStateException(e.toString());
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private void awaitStopped() {
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void awaitStoppedUninterruptibly() {
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

    /** The shutdown hook: logs the stop ({@code "event":"stopping"}), stops, halts when standalone. */
    private void onSignal() {
        onSignal(log, () -> stop("signal"), standalone.getAsBoolean());
    }

    /**
     * The body of a shutdown hook: logs that the stop began ({@code "event":"stopping"}), runs {@code stop}, and
     * when run as the main program halts with 0, or 4 when stopping failed, rather than the signal's 128+n (the
     * JVM would otherwise exit with 128+signal after the hooks; a clean stop is a clean exit).
     */
    static void onSignal(Logger log, Runnable stop, boolean standalone) {
        log.atInfo().setMessage("shutdown signal received, draining").addKeyValue("event", "stopping").log();
        int code = ExitCodes.OK;
        try {
            stop.run();
        } catch (RuntimeException e) {
            log.error("graceful shutdown failed: {}", e.toString());
            code = ExitCodes.INTERNAL;
        }
        if (standalone) {
            System.out.flush();
            System.err.flush();
            Runtime.getRuntime().halt(code);
        }
    }

    /**
     * Logs the limits a command runs with, one structured field per setting ({@code "event":"limits"}), so that
     * what a flag, a variable or the config file changed can be checked in the log.
     */
    public static void logLimits(Logger log, java.util.Map<String, String> limits) {
        org.slf4j.spi.LoggingEventBuilder line = log.atInfo().setMessage("limits in effect")
                .addKeyValue("event", "limits");
        limits.forEach(line::addKeyValue);
        line.log();
    }

    /** Starts something that listens: may be interrupted, or fail to bind. */
    @FunctionalInterface
    public interface Listener<T> {
        T start() throws Exception;
    }

    /**
     * Runs {@code start}: an interrupt is exit 4 ({@code interrupted while starting}, the interrupt kept), a
     * failure a {@link #bindFailure} for {@code what} at {@code address}; a CliException passes through.
     */
    public static <T> T listen(Listener<T> start, String what, InetSocketAddress address) {
        return listen(start, what, Cli.hostPort(address));
    }

    /** As above, for a listener named by {@code where} ({@code unix:/path/to.sock}, {@code 127.0.0.1:7443}). */
    public static <T> T listen(Listener<T> start, String what, String where) {
        try {
            return start.start();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException(ExitCodes.INTERNAL, "interrupted while starting");
        } catch (Exception e) {
            throw bindFailure(e, what, where);
        }
    }

    /**
     * How a command reports that it could not start listening on {@code address}: exit 2 with the address and the
     * reason. Netty rethrows the bind failure itself: java.net.BindException (NIO), NativeIoException (epoll).
     *
     * @param what which listener, e.g. {@code " (--admin-listen)"}, or empty for the main one
     */
    public static RuntimeException bindFailure(Exception e, String what, InetSocketAddress address) {
        return bindFailure(e, what, Cli.hostPort(address));
    }

    private static RuntimeException bindFailure(Exception e, String what, String where) {
        if (e instanceof IOException || e instanceof ChannelException) {
            return new CliException(ExitCodes.UNREACHABLE, "cannot listen on " + where + what
                    + ": " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
        if (e instanceof RuntimeException r) {
            return r;
        }
        return new CliException(ExitCodes.INTERNAL, "cannot start" + what + ": " + e.getClass().getName());
    }

    /** Deletes a state file the command wrote, if it is there; a failure is only a warning naming the file. */
    public static void deleteQuietly(Logger log, Path file) {
        if (file == null) {
            return;
        }
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            log.warn("cannot delete {} ({}); delete it by hand", file, e.getClass().getSimpleName());
        }
    }
}
