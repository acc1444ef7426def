package dev.previewtunnel.sampleapp;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** A monotonically increasing counter that other threads can wait on. */
final class ConnectionCounter {
    private int value;

    synchronized void increment() {
        value++;
        notifyAll();
    }

    synchronized int get() {
        return value;
    }

    /** Waits until the counter is at least {@code n}; returns whether it got there before the timeout. */
    synchronized boolean awaitAtLeast(int n, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (value < n) {
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, remaining);
        }
        return true;
    }
}
