package dev.previewtunnel.gateway;

import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Closes the open streams of one tunnel connection that moved no frame either way for the stream idle timeout
 * ({@code --stream-idle-timeout}), with {@link StreamEnding#IDLE} as the reason. One sweep per connection every
 * {@link #SWEEPS_PER_TIMEOUT}th of the timeout, running only while the connection has open streams, instead of a
 * timer per stream and a listener on each of its writes (docs/performance.md, finding 54).
 *
 * <p>A stream is closed at the first sweep at least the timeout after the sweep that last saw its activity move,
 * so never before the timeout and at most two sweep periods after it. Confined to the connection's event loop,
 * which its streams share.
 */
final class IdleStreams {
    static final int SWEEPS_PER_TIMEOUT = 8;

    private final long idleNanos;
    private final long sweepNanos;
    private final Set<StreamWatch> watched = new HashSet<>();
    /** The connection's loop, which its streams share: known from the first stream watched. */
    private EventLoop loop;
    private ScheduledFuture<?> sweep;

    IdleStreams(Duration idleTimeout) {
        this.idleNanos = idleTimeout.toNanos();
        this.sweepNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(10), idleNanos / SWEEPS_PER_TIMEOUT);
    }

    /** Watches an opened stream from now until it closes ({@link StreamWatch#channelInactive} unwatches it). */
    void watch(StreamWatch stream, EventLoop streamLoop) {
        loop = streamLoop;
        stream.activitySeen = stream.activity;
        stream.quietSince = loop.ticker().nanoTime();
        watched.add(stream);
        if (sweep == null) {
            sweep = loop.schedule(this::sweep, sweepNanos, TimeUnit.NANOSECONDS);
        }
    }

    void unwatch(StreamWatch stream) {
        watched.remove(stream);
    }

    /** Streams watched now. */
    int size() {
        return watched.size();
    }

    private void sweep() {
        long now = loop.ticker().nanoTime();
        List<StreamWatch> quiet = null;
        for (StreamWatch s : watched) {
            if (s.activity != s.activitySeen) {
                s.activitySeen = s.activity;
                s.quietSince = now;
            } else if (now - s.quietSince >= idleNanos) {
                if (quiet == null) {
                    quiet = new ArrayList<>();
                }
                quiet.add(s);
            }
        }
        if (quiet != null) {
            // Closed after the loop above: a close unwatches its stream, which would change the set under it.
            for (StreamWatch s : quiet) {
                watched.remove(s);
                s.closeStream();
            }
        }
        sweep = watched.isEmpty() ? null : loop.schedule(this::sweep, sweepNanos, TimeUnit.NANOSECONDS);
    }
}
