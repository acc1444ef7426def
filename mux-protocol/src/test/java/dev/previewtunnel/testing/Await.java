package dev.previewtunnel.testing;

import java.time.Duration;
import java.util.function.BooleanSupplier;

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
}
