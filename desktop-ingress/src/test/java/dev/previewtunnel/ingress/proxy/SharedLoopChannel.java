package dev.previewtunnel.ingress.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoop;
import io.netty.channel.embedded.EmbeddedChannel;

import java.nio.charset.StandardCharsets;

/**
 * An {@link EmbeddedChannel} on another embedded channel's loop, as a browser connection's stream shares that
 * connection's loop: its tasks run with the other channel's {@code runPendingTasks()}. Auto-read off, as streams are.
 */
final class SharedLoopChannel extends EmbeddedChannel {
    private final EventLoop shared;

    SharedLoopChannel(EventLoop shared) {
        super(false, false);
        this.shared = shared;
        config().setAutoRead(false);
        try {
            register();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public EventLoop eventLoop() {
        return shared != null ? shared : super.eventLoop(); // null while the superclass constructs
    }

    static ByteBuf ascii(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    /** Everything {@code ch} was sent so far (bytes only), as text; each buffer released. */
    static String sentText(EmbeddedChannel ch) {
        StringBuilder b = new StringBuilder();
        ByteBuf buf;
        while ((buf = ch.readOutbound()) != null) {
            b.append(buf.toString(StandardCharsets.US_ASCII));
            buf.release();
        }
        return b.toString();
    }
}
