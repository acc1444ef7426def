package dev.previewtunnel.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The ready line of a program started as a process: the first line on its stdout that is a JSON object with
 * {@code "ready"} in it (both programs print {@code {"event":"ready",...}} once they listen). Read on a thread of
 * its own so that the wait is bounded whatever the process does.
 */
public final class ReadyLines {
    private ReadyLines() {
    }

    /** The line, or null when stdout ended or {@code timeout} passed without one (the caller reports and kills). */
    public static String await(Process p, Duration timeout) throws InterruptedException {
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            try {
                BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.UTF_8));
                for (String l; (l = out.readLine()) != null; ) {
                    if (l.startsWith("{") && l.contains("\"ready\"")) {
                        return l;
                    }
                }
                return null;
            } catch (IOException e) {
                return null;
            }
        });
        try {
            return line.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            return null;
        }
    }
}
