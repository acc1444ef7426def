package dev.previewtunnel.mux.local;

import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

/**
 * Ends the process when the JVM is out of memory or otherwise broken, so a service manager restarts it (or the
 * user sees it die) instead of a zombie that holds its port, serves nobody and cannot even run its shutdown hook.
 *
 * <p>The JVM flag ({@link #JVM_FLAGS}) covers the heap. It does not see what it does not throw itself: direct
 * memory exhaustion ({@code Cannot reserve ... direct buffer memory}, Netty's {@code OutOfDirectMemoryError}), and
 * Netty catches every Throwable of a pipeline (turning it into {@code exceptionCaught} or a failed write) and of an
 * event loop task (an allocation failing in a socket read becomes {@code exceptionCaught} too). So the programs'
 * mains call {@link #install()}, every {@code exceptionCaught} of the project's handlers calls {@link #check}, and
 * the event loop groups are {@link #watch watched}. Only a program that installed it is ended: a library user or a
 * test that embeds the classes keeps its process.
 *
 * <p>The end is {@link Runtime#halt}, not {@link System#exit}: shutdown hooks (a drain) need working event loops and
 * memory, which is what is missing; a hook that hangs would turn the zombie into one that also ignores SIGTERM.
 */
public final class FatalErrors {
    /** The flags every launcher of the programs passes to {@code java} (systemd units, docs, bench, spikes). */
    public static final List<String> JVM_FLAGS = List.of("-XX:+ExitOnOutOfMemoryError");
    /** The exit status after a fatal error: the programs' "internal error" (ExitCodes.INTERNAL). */
    public static final int EXIT_STATUS = 4;

    private static final AtomicBoolean installed = new AtomicBoolean();

    private FatalErrors() {
    }

    /** Installs the default uncaught-exception handler: a fatal error escaping any thread ends the process. */
    public static void install() {
        if (!installed.compareAndSet(false, true)) {
            return;
        }
        Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((thread, error) -> {
            check(error);
            if (previous != null) {
                previous.uncaughtException(thread, error);
            } else {
                thread.getThreadGroup().uncaughtException(thread, error);
            }
        });
    }

    /**
     * Ends the process if {@code t} (or one of its causes) is fatal: the JVM cannot be trusted after an
     * {@link OutOfMemoryError} or another {@link VirtualMachineError}, nor after a {@link LinkageError} (a class
     * that failed to load or initialise stays broken). Otherwise, or before {@link #install()}, returns.
     */
    public static void check(Throwable t) {
        Throwable fatal = installed.get() ? fatalIn(t) : null;
        if (fatal != null) {
            halt(fatal);
        }
    }

    static Throwable fatalIn(Throwable t) {
        for (int depth = 0; t != null && depth < 16; depth++, t = t.getCause()) {
            if (t instanceof VirtualMachineError || t instanceof LinkageError) {
                return t;
            }
        }
        return null;
    }

    /**
     * Ends the process when one of {@code group}'s event loops terminates while {@code stopping} is false: Netty
     * logs an Error that escapes a loop's own run loop and lets the thread die, and every channel on it would hang.
     */
    public static void watch(EventLoopGroup group, BooleanSupplier stopping) {
        for (EventExecutor loop : group) {
            loop.terminationFuture().addListener(f -> {
                if (installed.get() && !stopping.getAsBoolean() && !group.isShuttingDown()) {
                    halt(new IllegalStateException("event loop " + loop + " terminated"));
                }
            });
        }
    }

    private static void halt(Throwable why) {
        try {
            // One line, the type and the JVM's message (no payload, so no secret): the service log says why.
            System.err.println("{\"level\":\"ERROR\",\"event\":\"fatal_error\",\"error\":\""
                    + why.getClass().getName() + "\",\"message\":\"" + escape(String.valueOf(why.getMessage()))
                    + "\",\"action\":\"exiting with status " + EXIT_STATUS + "\"}");
            System.err.flush();
        } finally {
            Runtime.getRuntime().halt(EXIT_STATUS);
        }
    }

    private static String escape(String s) {
        StringBuilder out = new StringBuilder(Math.min(s.length(), 200));
        for (int i = 0; i < s.length() && i < 200; i++) {
            char c = s.charAt(i);
            out.append(c == '"' || c == '\\' ? '\'' : c < 0x20 ? ' ' : c);
        }
        return out.toString();
    }
}
