package dev.previewtunnel.ingress.proxy;

import io.netty.handler.codec.http.HttpObject;
import io.netty.util.ReferenceCountUtil;

import java.util.ArrayDeque;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Request parts the decoder produced after the request in progress had ended: a pipelining client (RFC 9112
 * section 9.3.2) sent its next request before the answer to the previous one. They wait here, in order, and are
 * handed back once that exchange has finished, so every request is answered in turn and none is dropped.
 * Bounded without a limit of its own: the proxy reads nothing more from the browser once the request in progress
 * is complete, so what waits here came from the one read that completed it.
 */
final class PipelinedRequests {
    private final ArrayDeque<HttpObject> parts = new ArrayDeque<>();
    /** {@link #replay} is handing parts back: they belong to the request now in progress, not queued again. */
    private boolean replaying;

    /**
     * Keeps {@code msg} (and returns true) when it belongs to a later request: an absolute-form exchange is in
     * progress and its request has ended, or earlier parts already wait (order is kept). Otherwise the exchange in
     * progress handles it.
     */
    boolean offer(Object msg, boolean absoluteFormExchange, boolean requestDone) {
        if (!absoluteFormExchange || !(msg instanceof HttpObject part)
                || !(requestDone || (!replaying && !parts.isEmpty()))) {
            return false;
        }
        parts.add(part);
        return true;
    }

    boolean isEmpty() {
        return parts.isEmpty();
    }

    /** Hands the waiting parts, oldest first, to {@code sink} (which owns each) for as long as {@code more} holds. */
    void replay(BooleanSupplier more, Consumer<Object> sink) {
        replaying = true;
        try {
            while (!parts.isEmpty() && more.getAsBoolean()) {
                sink.accept(parts.poll());
            }
        } finally {
            replaying = false;
        }
    }

    /** Drops every waiting part (the connection is closing or stops being HTTP). */
    void releaseAll() {
        HttpObject part;
        while ((part = parts.poll()) != null) {
            ReferenceCountUtil.release(part);
        }
    }
}
