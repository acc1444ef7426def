package dev.previewtunnel.cli;

import io.netty.channel.ChannelException;
import org.slf4j.Logger;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/**
 * The start/stop handshake of a command that runs until SIGTERM/SIGINT ({@code env-gateway serve},
 * {@code desktop-ingress run}): it signals "started" once its ready line is printed, blocks until stopped, and is
 * stopped by a JVM shutdown hook (or, in tests, by a direct call). Whatever happens, nobody waiting for start or
 * stop waits forever.
 */
public final class ServiceLifecycle {
    private final CountDownLatch started = new CountDownLatch(1);
    private final CountDownLatch stopped = new CountDownLatch(1);

    /** Runs the command's body; afterwards (normally or not) releases everyone waiting for start or stop. */
    public int call(IntSupplier body) {
        try {
            return body.getAsInt();
        } finally {
            // Whatever happened, nobody waiting for start or stop may wait forever.
            started.countDown();
            stopped.countDown();
        }
    }

    /** The command is ready (its ready line is out). */
    public void markStarted() {
        started.countDown();
    }

    /** The command has shut down; releases the thread blocked in {@link #awaitStopped()}. */
    public void markStopped() {
        stopped.countDown();
    }

    /** Waits until the command is ready or has ended (failed); true if that happened in time. */
    public boolean awaitStarted(long timeout, TimeUnit unit) throws InterruptedException {
        return started.await(timeout, unit);
    }

    /** Blocks the command's thread until stopped; an interrupt ends the wait (and is kept). */
    public void awaitStopped() {
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits until stopped, through interrupts (which are kept); for callers of stop(). */
    public void awaitStoppedUninterruptibly() {
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

    /** Registers {@code onSignal} as a JVM shutdown hook on a thread named {@code name}; returns the hook. */
    public static Thread addShutdownHook(Runnable onSignal, String name) {
        Thread hook = new Thread(onSignal, name);
        Runtime.getRuntime().addShutdownHook(hook);
        return hook;
    }

    public static void removeShutdownHook(Thread hook) {
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // JVM shutting down: the hook is what stopped us.
        }
    }

    /**
     * The end of a shutdown hook: when run as the main program ({@code standalone}), flushes and halts with
     * {@code code}. The JVM would otherwise exit with 128+signal after the hooks; a clean stop is a clean exit.
     */
    public static void haltIfStandalone(boolean standalone, int code) {
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

    /**
     * The body of the shutdown hook: logs that the stop began ({@code "event":"stopping"}), runs {@code stop}, and
     * when run as the main program halts with 0, or 4 when stopping failed, rather than the signal's 128+n.
     */
    public static void onSignal(Logger log, Runnable stop, boolean standalone) {
        log.atInfo().setMessage("shutdown signal received, draining").addKeyValue("event", "stopping").log();
        int code = ExitCodes.OK;
        try {
            stop.run();
        } catch (RuntimeException e) {
            log.error("graceful shutdown failed: {}", e.toString());
            code = ExitCodes.INTERNAL;
        }
        haltIfStandalone(standalone, code);
    }

    /**
     * How a command reports that it could not start listening on {@code address}: exit 2 with the address and the
     * reason. Netty rethrows the bind failure itself: java.net.BindException (NIO), NativeIoException (epoll).
     *
     * @param what which listener, e.g. {@code " (--admin-listen)"}, or empty for the main one
     */
    public static RuntimeException bindFailure(Exception e, String what, InetSocketAddress address) {
        if (e instanceof IOException || e instanceof ChannelException) {
            return new CliException(ExitCodes.UNREACHABLE, "cannot listen on " + Cli.hostPort(address) + what
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
