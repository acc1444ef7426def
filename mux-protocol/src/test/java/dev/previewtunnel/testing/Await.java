package dev.previewtunnel.testing;

import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/** Waits on a condition instead of sleeping: returns as soon as it holds, fails with a message on timeout. */
public final class Await {
    private Await() {
    }

    public static void until(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for: " + what);
            }
            // Park briefly between polls: this polls a condition, it does not wait for a fixed time.
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
    }

    /**
     * Waits until a writer has stopped making progress ({@code progress} grew, then did not for 200 ms) or
     * {@code ended} completed, and returns the progress by then; fails after {@code timeout}. No event marks "no
     * progress", so this one compares counts 200 ms apart; a writer that queued more than its high-water mark is
     * unwritable from its first write, so writability cannot tell when the buffers further on are full.
     */
    public static long stalled(String what, Duration timeout, LongSupplier progress, Future<?> ended)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        long seen = -1;
        while (progress.getAsLong() == 0 || progress.getAsLong() != seen) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what
                        + " to stall: " + progress.getAsLong() + " taken");
            }
            seen = progress.getAsLong();
            try {
                ended.get(200, TimeUnit.MILLISECONDS);
                break;
            } catch (ExecutionException endedBadly) {
                break;
            } catch (TimeoutException stillGoing) {
                // compare the count again
            }
        }
        return progress.getAsLong();
    }
}
