package dev.previewtunnel.mux.relay;

import io.netty.channel.Channel;
import io.netty.handler.codec.http2.Http2StreamChannel;

import java.util.concurrent.RejectedExecutionException;

/**
 * Reading on demand towards an HTTP/2 stream channel that lives on another event loop. A write handed to such a
 * stream waits in its loop's task queue, counted towards the stream's writability by Netty's estimate of the
 * message, and a stream channel estimates anything that is not a DATA frame (bytes, or HTTP objects, become DATA
 * frames only in {@link StreamByteAdapter}, on the stream's loop) at 9 bytes (plus 32 for the task): while the
 * stream's loop is busy, the stream looks writable however many MiB wait for it (an upload to a target that did not
 * read left the ingress 4.5-15 MiB beyond the window, against a 512 KiB mark). So the decision to read on is taken
 * only after a round trip through the stream's loop, once everything written is in the stream's own accounting:
 * at most one turn of reads ({@code RelayReads.MAX_READS}) is ever unaccounted.
 */
public final class CrossLoopWrites {
    private CrossLoopWrites() {
    }

    /**
     * Runs {@code readOn} on {@code self}'s loop once the writes {@code self} handed to {@code peer} this turn count
     * towards {@code peer}'s writability: at once when they already do, else after a round trip through
     * {@code peer}'s loop (tasks run in order, so it runs after those writes and their flush). Closes {@code self}
     * when {@code peer}'s loop is shutting down: nothing more will be relayed.
     */
    public static void whenAccounted(Channel self, Channel peer, Runnable readOn) {
        if (!(peer instanceof Http2StreamChannel) || peer.eventLoop() == self.eventLoop()) {
            readOn.run();
            return;
        }
        try {
            peer.eventLoop().execute(() -> self.eventLoop().execute(readOn));
        } catch (RejectedExecutionException stopping) {
            self.close();
        }
    }
}
