package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.testing.ReadTurns;
import dev.previewtunnel.testing.Uploads;
import org.junit.jupiter.api.Test;

import java.io.OutputStream;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link UpstreamResponseTest}'s tests with the browser connections on an event loop of their own: the tunnel
 * connection and its streams on another. The case of a pool smaller than the ingress's loops (its default of two
 * connections on a machine with more than two cores), where every decoded response part, the end of each read and
 * each early end cross threads on their way to the browser, and the browser side asks the stream for more reads from
 * its own loop. Also the request direction: a body written to a stream on another loop.
 */
class UpstreamResponseOnAnotherLoopTest extends UpstreamResponseTest {
    private static final int UPLOAD = 24 << 20;
    /** A few turns of reads (8 socket reads of 16 KiB each) and the HTTP decoder's 64 KiB chunk. */
    private static final long BOUND = 1 << 20;

    @Override
    boolean browserOnAnotherLoop() {
        return true;
    }

    @Test
    void aRequestBodyTowardsAStreamWhoseLoopIsBusyIsNotReadOnWithoutBound() throws Exception {
        try (Browser b = new Browser()) {
            b.send(keepAliveRequest("/upload").replace("GET ", "POST ") + "\r\nContent-Length: " + UPLOAD
                    + "\r\n\r\n");
            assertTrue(uploadHeadRead.await(10, TimeUnit.SECONDS), "the target got the request head");
            ReadTurns reads = lastBrowserReads;
            // The tunnel's loop (its streams' too) busy from now, as a loaded loop is: body parts handed to the
            // stream wait in that loop's queue, where the stream counts each at a few bytes. Read on by the
            // stream's writability alone, the ingress would take the whole upload into memory meanwhile.
            CountDownLatch hold = new CountDownLatch(1);
            group.next().execute(() -> Uploads.holdUntil(hold));
            try {
                reads.watch();
                long before = reads.bytesRead();
                OutputStream out = b.out();
                CompletableFuture.runAsync(() -> Uploads.send(out, UPLOAD));
                until("the ingress stopped reading the body, or read beyond " + BOUND + " bytes",
                        Duration.ofSeconds(30),
                        () -> reads.stoppedWithoutAsking() || reads.bytesRead() - before > BOUND);
                long read = reads.bytesRead() - before;
                System.out.printf("read %d bytes of the body while its stream's loop was busy (bound %d)%n", read,
                        BOUND);
                assertTrue(read <= BOUND, "read " + read + " bytes of the body while its stream's loop was busy");
            } finally {
                hold.countDown();
            }
        }
    }
}
