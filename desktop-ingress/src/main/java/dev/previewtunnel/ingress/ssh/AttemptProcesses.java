package dev.previewtunnel.ingress.ssh;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The ssh children of one connect attempt. Closing stops every one of them and refuses new ones, so a
 * {@link SshLink#close()} racing an attempt in progress leaves no child behind, and no attempt's children outlive
 * it (the next attempt starts from nothing).
 */
final class AttemptProcesses implements AutoCloseable {
    private static final int STDOUT_LIMIT = 64 * 1024;

    /** A finished short command: exit status (-1: killed at its time limit), stdout, the stderr lines. */
    record Result(int exit, String stdout, String errorLines) {
    }

    private final List<SshProcess> children = new ArrayList<>();
    private boolean closed;

    /** Starts a child (see {@link SshProcess#start}); throws if this attempt is already closed. */
    SshProcess start(String name, List<String> command, SshProcess.Stdout stdout, Path errorLog) {
        synchronized (this) {
            if (closed) {
                throw new SshLinkException("stopped");
            }
            SshProcess p = SshProcess.start(name, command, stdout, errorLog);
            children.add(p);
            return p;
        }
    }

    /**
     * Runs a short command with {@code stdin} (null: none) copied to its stdin, and waits for it within
     * {@code timeout} (it is killed at the limit, which also unblocks a stalled stdin copy).
     */
    Result run(String name, List<String> command, InputStream stdin, Duration timeout) {
        SshProcess p = start(name, command, SshProcess.Stdout.PIPE, null);
        CompletableFuture<String> out = new CompletableFuture<>();
        Thread reader = new Thread(() -> out.complete(readBounded(p.stdout())), "ssh-" + name + "-stdout");
        reader.setDaemon(true);
        reader.start();
        CompletableFuture.delayedExecutor(timeout.toMillis(), TimeUnit.MILLISECONDS).execute(() -> {
            if (p.alive()) {
                p.process().destroyForcibly();
            }
        });
        try (OutputStream in = p.stdin()) {
            if (stdin != null) {
                stdin.transferTo(in);
            }
        } catch (IOException e) {
            // the command ended early or was killed: its exit status and stderr say why
        }
        int exit = p.await(timeout);
        String stdout = out.completeOnTimeout("", 2, TimeUnit.SECONDS).join();
        synchronized (this) {
            children.remove(p);
        }
        return new Result(exit, stdout, p.errorLines());
    }

    private static String readBounded(InputStream in) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        byte[] chunk = new byte[4096];
        try (in) {
            for (int n; (n = in.read(chunk)) >= 0; ) {
                if (buf.size() < STDOUT_LIMIT) {
                    buf.write(chunk, 0, Math.min(n, STDOUT_LIMIT - buf.size()));
                }
            }
        } catch (IOException ignored) {
            // the process is gone; what arrived is kept
        }
        return buf.toString(StandardCharsets.UTF_8);
    }

    /** Stops every child: the first one started (the master) last, so the others end over a live connection. */
    @Override
    public void close() {
        List<SshProcess> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(children);
            children.clear();
        }
        for (int i = all.size() - 1; i >= 0; i--) {
            all.get(i).stop(i == 0 ? Duration.ZERO : Duration.ofSeconds(3));
        }
    }
}
