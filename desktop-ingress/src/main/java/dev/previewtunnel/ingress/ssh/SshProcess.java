package dev.previewtunnel.ingress.ssh;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One {@code ssh} child. Its stdin is a pipe, never the user's terminal (ssh prompts on /dev/tty itself when it
 * must); its stderr is drained into an {@link OutputTail}, which is what error lines quote.
 */
final class SshProcess {
    private final String name;
    private final Process process;
    private final OutputTail stderr;

    private SshProcess(String name, Process process, OutputTail stderr) {
        this.name = name;
        this.process = process;
        this.stderr = stderr;
    }

    /** What happens to a child's stdout: the caller reads it, or it is discarded. */
    enum Stdout { PIPE, DISCARD }

    /**
     * Starts {@code command} with stdin a pipe (its write end closes when this JVM exits, however it exits, which is
     * how the master and the gateway learn the desktop is gone); {@code errorLog}: where stderr is also written
     * (owner-only, bounded), or null.
     */
    static SshProcess start(String name, List<String> command, Stdout stdout, Path errorLog) {
        ProcessBuilder pb = new ProcessBuilder(command);
        if (stdout == Stdout.DISCARD) {
            pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        }
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new SshLinkException("cannot run " + command.get(0) + ": " + e.getMessage(), e);
        }
        OutputTail err = new OutputTail(8192, errorLog);
        err.drain(p.getErrorStream(), "ssh-" + name + "-stderr");
        return new SshProcess(name, p, err);
    }

    OutputStream stdin() {
        return process.getOutputStream();
    }

    InputStream stdout() {
        return process.getInputStream();
    }

    Process process() {
        return process;
    }

    boolean alive() {
        return process.isAlive();
    }

    /** The last lines ssh (or the remote command) wrote on stderr, for an error line. */
    String errorLines() {
        return stderr.lastLines(300);
    }

    /** Waits up to {@code timeout} until everything the process wrote on stderr has been read. */
    void drained(Duration timeout) {
        try {
            stderr.done().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            // what arrived so far is what the error line quotes
        }
    }

    /** Waits for the exit; -1 if it did not exit within {@code timeout} (it is then killed). */
    int await(Duration timeout) {
        try {
            if (process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                return process.exitValue();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        process.destroyForcibly();
        return -1;
    }

    /** Closes stdin, SIGTERM after {@code grace}, SIGKILL a second later; returns once it has exited (bounded). */
    void stop(Duration grace) {
        try {
            process.getOutputStream().close();
        } catch (IOException ignored) {
            // already closed or gone
        }
        try {
            if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroy();
                if (!process.waitFor(1, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(2, TimeUnit.SECONDS);
                }
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "ssh " + name + " (pid " + process.pid() + ")";
    }
}
