package dev.previewtunnel.cli;

import java.nio.file.Path;

/**
 * A process that holds the {@link StateLock} of the directory given as its argument: prints "locked" (or the
 * refusal) on stdout, then waits until stdin ends or it is killed. For StateLockTest's second process.
 */
public final class StateLockHolder {
    private StateLockHolder() {
    }

    public static void main(String[] args) throws Exception {
        try (StateLock lock = StateLock.acquire(Path.of(args[0]), "holder", "try later")) {
            System.out.println("locked");
            System.out.flush();
            while (System.in.read() >= 0) {
                // until the parent closes stdin
            }
        } catch (CliException e) {
            System.out.println("refused: " + e.getMessage());
        }
    }
}
