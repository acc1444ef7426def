package dev.previewtunnel.testing;

import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** An upload to a peer that may stop reading, and a loop held busy meanwhile: the pieces of backpressure tests. */
public final class Uploads {
    private Uploads() {
    }

    /**
     * Writes {@code total} zero bytes in 64 KiB pieces; returns quietly when the socket is closed under a blocked
     * write (the end of a test in which the reader stopped, as it should).
     */
    public static void send(OutputStream out, long total) {
        byte[] chunk = new byte[64 << 10];
        try {
            for (long done = 0; done < total; done += chunk.length) {
                out.write(chunk);
            }
        } catch (IOException e) {
            // closed at the end of the test while blocked
        }
    }

    /** Holds the calling thread (an event loop, in these tests) until {@code release} counts down, at most 60 s. */
    public static void holdUntil(CountDownLatch release) {
        try {
            release.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
