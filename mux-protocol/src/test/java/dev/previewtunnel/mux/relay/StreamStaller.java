package dev.previewtunnel.mux.relay;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2StreamChannel;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Stalls the receiver of a stream without using up the stream's window, for the tests of what a stalled stream may be
 * sent (docs/security.md, hostile peers, item 11): one filler frame at a time, every 10 ms, only while at least
 * {@code heldBack} of the window is left, until the window has stopped coming back for a second. Then the receiver has
 * stopped reading the stream, and the test's next step runs.
 */
public final class StreamStaller {
    public final AtomicLong fillerBytes = new AtomicLong();
    private final int heldBack;
    private final Supplier<ByteBuf> filler;
    private long lastCreditNanos = System.nanoTime();
    private volatile int lastWindow = -1;

    /**
     * @param heldBack what it leaves of the stream's window: the receiver returns credit once it has consumed half its
     *                 window, so this leaves room for a frame beyond that half (and whatever the stream carried first),
     *                 and credit stops only when the receiver stops reading
     * @param filler   the payload of each filler DATA frame (a fresh buffer each call)
     */
    public StreamStaller(int heldBack, Supplier<ByteBuf> filler) {
        this.heldBack = heldBack;
        this.filler = filler;
    }

    /**
     * Starts on {@code stream}'s event loop; runs {@code then} there once the receiver has stalled, nothing once
     * {@code goingOn} turns false.
     */
    public void start(Http2StreamChannel stream, BooleanSupplier goingOn, Runnable then) {
        Http2FrameCodec codec = stream.parent().pipeline().get(Http2FrameCodec.class);
        stream.eventLoop().execute(() -> fill(stream, codec, goingOn, then));
    }

    /** The stream's send window when it last looked at it (-1 before it did). */
    public int lastWindow() {
        return lastWindow;
    }

    private void fill(Http2StreamChannel stream, Http2FrameCodec codec, BooleanSupplier goingOn, Runnable then) {
        if (!goingOn.getAsBoolean()) {
            return;
        }
        Http2Connection c = codec.connection();
        int window = c.remote().flowController().windowSize(c.stream(stream.stream().id()));
        if (window > lastWindow) {
            lastCreditNanos = System.nanoTime();
        }
        lastWindow = window;
        if (window >= heldBack) {
            ByteBuf payload = filler.get();
            fillerBytes.addAndGet(payload.readableBytes());
            stream.writeAndFlush(new DefaultHttp2DataFrame(payload));
        } else if (System.nanoTime() - lastCreditNanos > TimeUnit.SECONDS.toNanos(1)) {
            then.run();
            return;
        }
        stream.eventLoop().schedule(() -> fill(stream, codec, goingOn, then), 10, TimeUnit.MILLISECONDS);
    }
}
