package dev.previewtunnel.ingress.proxy;

import io.netty.channel.EventLoop;
import io.netty.channel.embedded.EmbeddedChannel;

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
}
