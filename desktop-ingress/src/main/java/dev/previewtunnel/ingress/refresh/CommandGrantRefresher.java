package dev.previewtunnel.ingress.refresh;

import dev.previewtunnel.mux.wire.TunnelError;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * Runs a command (no shell) whose first line of standard output is the new grant, e.g. a script that calls
 * {@code ssh env-host env-gateway grant issue ...}. It learns the request from environment variables
 * {@code PTUN_SESSION}, {@code PTUN_TARGET}, {@code PTUN_GRANT_ID} and {@code PTUN_REASON}; it is killed after
 * the timeout. Its standard error is discarded so a grant printed there can never reach our logs.
 */
public final class CommandGrantRefresher implements GrantRefresher {
    private static final int MAX_OUTPUT = 16 * 1024;

    private final List<String> command;
    private final Duration timeout;
    private final Executor executor;

    public CommandGrantRefresher(List<String> command, Duration timeout, Executor executor) {
        if (command.isEmpty()) {
            throw new IllegalArgumentException("empty refresh command");
        }
        this.command = List.copyOf(command);
        this.timeout = timeout;
        this.executor = executor;
    }

    @Override
    public CompletableFuture<String> refresh(String session, String target, String grantId, TunnelError why) {
        return CompletableFuture.supplyAsync(() -> {
            ProcessBuilder pb = new ProcessBuilder(command)
                    .redirectError(ProcessBuilder.Redirect.DISCARD)
                    .redirectInput(ProcessBuilder.Redirect.PIPE);
            pb.environment().put("PTUN_SESSION", session);
            pb.environment().put("PTUN_TARGET", target);
            pb.environment().put("PTUN_GRANT_ID", grantId == null ? "" : grantId);
            pb.environment().put("PTUN_REASON", why.code());
            Process p = null;
            try {
                p = pb.start();
                p.getOutputStream().close();
                byte[] out;
                try (InputStream in = p.getInputStream()) {
                    out = in.readNBytes(MAX_OUTPUT);
                }
                if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("grant refresh command timed out");
                }
                if (p.exitValue() != 0) {
                    throw new IllegalStateException("grant refresh command exited with " + p.exitValue());
                }
                String first = new String(out, StandardCharsets.UTF_8).lines().findFirst().orElse("").trim();
                if (first.isEmpty()) {
                    throw new IllegalStateException("grant refresh command printed nothing");
                }
                return first;
            } catch (IOException e) {
                throw new IllegalStateException("grant refresh command could not run: " + e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted");
            } finally {
                if (p != null) {
                    p.destroyForcibly();
                }
            }
        }, executor);
    }
}
