package dev.previewtunnel.testing;

import java.io.IOException;
import java.io.OutputStream;

/** An upload to a peer that may stop reading: the piece of backpressure tests that sends. */
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
}
