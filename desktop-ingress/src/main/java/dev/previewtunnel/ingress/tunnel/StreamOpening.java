package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.mux.Authority;
import dev.previewtunnel.mux.TunnelConnection;
import dev.previewtunnel.mux.TunnelError;
import dev.previewtunnel.mux.TunnelStreamException;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.netty.util.concurrent.Promise;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * One attempt to open a stream on a {@link LoopSlice}: on its least-loaded connection at once, or, with none up,
 * after waiting for one, at most the open timeout. When none comes up in time the open fails with
 * {@link TunnelError#GATEWAY_UNREACHABLE} ("since ..., retrying"), which the proxy answers with its 502 page.
 */
final class StreamOpening {
    private StreamOpening() {
    }

    /** Opens a stream on {@code slice}; the returned future completes on the slice's loop. */
    static Future<Http2StreamChannel> open(LoopSlice slice, Authority target, String grant, Duration timeout) {
        TunnelConnection now;
        Future<TunnelConnection> up = null;
        // One section of the slice's monitor: a connection that came up between the two looks would otherwise
        // leave this open waiting for the one after it.
        synchronized (slice) {
            now = slice.leastLoaded();
            if (now == null) {
                up = slice.await();
            }
        }
        if (now != null) {
            return now.openStream(target, grant, timeout);
        }
        Promise<Http2StreamChannel> result = slice.loop.newPromise();
        if (up == null) {
            result.setFailure(unreachable(slice));
            return result;
        }
        // No connection up: ask for an attempt now rather than at the end of the backoff, and wait for the next
        // connection (or, never up yet, the next attempt's outcome). The open timeout bounds the wait, so a gateway
        // that stays down, or an attempt that never settles, answers the browser in time.
        Future<TunnelConnection> awaited = up;
        Future<?> guard = slice.loop.schedule(() -> result.tryFailure(unreachable(slice)), timeout.toNanos(),
                TimeUnit.NANOSECONDS);
        GenericFutureListener<Future<TunnelConnection>> whenUp = f -> {
            if (result.isDone()) {
                return; // answered already (timed out): no stream for it
            }
            if (f.isSuccess()) {
                ((TunnelConnection) f.getNow()).openStream(target, grant, timeout).addListener(s -> {
                    if (s.isSuccess()) {
                        Http2StreamChannel stream = (Http2StreamChannel) s.getNow();
                        if (!result.trySuccess(stream)) {
                            stream.close(); // the open timed out meanwhile: nobody will relay this stream
                        }
                    } else {
                        result.tryFailure(s.cause());
                    }
                });
            } else {
                result.tryFailure(unreachable(slice));
            }
        };
        // An open answered (timed out) leaves the connection's promise: over a long outage one listener per
        // request would pile up on it, and the connection that ends the outage would open a stream for each.
        result.addListener(f -> {
            guard.cancel(false);
            awaited.removeListener(whenUp);
            slice.awaited();
        });
        awaited.addListener(whenUp);
        slice.demandConnection();
        return result;
    }

    /** Why no stream: since when the slice's connections are down and the last error, never a token or grant. */
    static TunnelStreamException unreachable(LoopSlice slice) {
        LoopSlice.Counts s = slice.counts();
        StringBuilder why = new StringBuilder("environment gateway unreachable");
        if (s.downSince() != null) {
            why.append(" since ").append(s.downSince());
        }
        if (s.lastError() != null) {
            why.append(" (").append(s.lastError()).append(")");
        }
        why.append(slice.closed() ? "; ingress is stopping" : ", retrying");
        return new TunnelStreamException(TunnelError.GATEWAY_UNREACHABLE, why.toString());
    }
}
