package dev.previewtunnel.mux.relay;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A hostile sender's attack on a stream its receiver has stopped reading (docs/security.md, hostile peers, item 11),
 * for the tests that attack the gateway (a target that never reads) and the ingress (a browser that never reads).
 * Two phases. First it stalls the receiver without using up the stream's window ({@link StreamStaller}, 64 KiB a
 * frame); then one byte per DATA frame, each flushed alone (Netty's encoder merges DATA frames that wait unflushed), a
 * batch per scheduled task, until the stream is reset or closed, or {@code maxFrames} have gone.
 */
public final class WindowPacedFlood {
    private static final int FILLER = 64 * 1024;
    private static final int BATCH = 512;

    public final AtomicLong sent = new AtomicLong();
    /** Completed by the test with the error code of the RST_STREAM it receives; the flood stops then. */
    public final CompletableFuture<Long> reset = new CompletableFuture<>();
    private final StreamStaller staller;
    /** Filler bytes sent in phase one. */
    public final AtomicLong fillerBytes;
    private final int maxFrames;

    /**
     * @param heldBack what phase one leaves of the stream's window ({@link StreamStaller})
     * @param maxFrames where phase two stops if no reset comes: past the receiver's limit, short of what would run
     *                  the test's own JVM out of heap without it
     */
    public WindowPacedFlood(int heldBack, int maxFrames) {
        this.staller = new StreamStaller(heldBack, () -> Unpooled.wrappedBuffer(new byte[FILLER]));
        this.fillerBytes = staller.fillerBytes;
        this.maxFrames = maxFrames;
    }

    /** Starts the flood on {@code stream}'s event loop. */
    public void start(Http2StreamChannel stream) {
        staller.start(stream, () -> goingOn(stream), () -> send(stream));
    }

    /** The stream's send window when phase one last looked at it (-1 before it did). */
    public int lastWindow() {
        return staller.lastWindow();
    }

    private boolean goingOn(Http2StreamChannel stream) {
        return stream.isActive() && !reset.isDone();
    }

    /** Phase two. */
    private void send(Http2StreamChannel stream) {
        for (int i = 0; i < BATCH && goingOn(stream) && sent.get() < maxFrames; i++) {
            stream.writeAndFlush(new DefaultHttp2DataFrame(Unpooled.wrappedBuffer(new byte[]{(byte) i})));
            sent.incrementAndGet();
        }
        if (goingOn(stream) && sent.get() < maxFrames) {
            // Scheduled, not executed: the loop then reads its socket between batches and sees the reset soon, where
            // queued tasks would run for up to a second (Netty's task quantum) before it polls again.
            stream.eventLoop().schedule(() -> send(stream), 0, TimeUnit.NANOSECONDS);
        }
    }
}
