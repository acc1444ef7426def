package dev.previewtunnel.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;
import io.netty.channel.embedded.EmbeddedChannel;

import java.nio.charset.StandardCharsets;

/**
 * An {@link EmbeddedChannel} on another embedded channel's loop, as a relay's two channels share one loop (a browser
 * connection and its stream, a stream and its dialed socket): its tasks run with the other channel's
 * {@code runPendingTasks()}, and {@code RelayHandler.link} accepts the pair.
 */
public class SharedLoopChannel extends EmbeddedChannel {
    private final EventLoop shared;

    public SharedLoopChannel(EventLoop shared, ChannelHandler... handlers) {
        super(false, false, handlers);
        this.shared = shared;
        try {
            register();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A stream's side: auto-read off, as stream channels are. */
    public static SharedLoopChannel stream(EventLoop shared) {
        SharedLoopChannel ch = new SharedLoopChannel(shared);
        ch.config().setAutoRead(false);
        return ch;
    }

    @Override
    public EventLoop eventLoop() {
        return shared != null ? shared : super.eventLoop(); // null while the superclass constructs
    }

    public static ByteBuf ascii(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    /** Everything {@code ch} was sent so far (bytes only), as text; each buffer released. */
    public static String sentText(EmbeddedChannel ch) {
        StringBuilder b = new StringBuilder();
        ByteBuf buf;
        while ((buf = ch.readOutbound()) != null) {
            b.append(buf.toString(StandardCharsets.US_ASCII));
            buf.release();
        }
        return b.toString();
    }
}
