package dev.previewtunnel.mux.relay;

import io.netty.channel.Channel;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * A drain by activity: while a program drains, each stream may go on as long as it moves bytes; a stream whose
 * byte count has not changed for {@code idle} is cut (reason {@code idle}), and whatever is still open when the
 * drain's maximum runs out is reported by {@link #finish} (reason {@code drain_timeout}) for the caller to close.
 * So a large download finishes, while an idle keep-alive or WebSocket does not hold the stop for the maximum.
 *
 * <p>It samples every stream's count on one executor a few times per {@code idle}; it only reads counters and
 * closes channels, never blocks. Counts come from {@code activity} (bytes both ways, any monotonic count works).
 */
public final class DrainWatch {
    /** Told of each stream the drain cut, with the reason ({@code idle} or {@code drain_timeout}). */
    public interface CutListener {
        void cut(Channel stream, String reason);
    }

    private final Supplier<Collection<Channel>> streams;
    private final ToLongFunction<Channel> activity;
    private final long idleNanos;
    private final CutListener listener;
    private final EventExecutor executor;
    /** Per stream: {last count, when it last changed}. Touched on {@link #executor} only. */
    private final Map<Channel, long[]> seen = new HashMap<>();
    private ScheduledFuture<?> ticks;
    private int cutIdle;
    private int cutAtMaximum;
    private boolean finished;

    private DrainWatch(Supplier<Collection<Channel>> streams, ToLongFunction<Channel> activity, Duration idle,
                       CutListener listener, EventExecutor executor) {
        this.streams = streams;
        this.activity = activity;
        this.idleNanos = idle.toNanos();
        this.listener = listener;
        this.executor = executor;
    }

    /** Starts watching now; call {@link #finish} when the drain ends (streams done or its maximum reached). */
    public static DrainWatch start(Supplier<Collection<Channel>> streams, ToLongFunction<Channel> activity,
                                   Duration idle, CutListener listener, EventExecutor executor) {
        DrainWatch w = new DrainWatch(streams, activity, idle, listener, executor);
        long period = Math.max(10, Math.min(250, idle.toMillis() / 4));
        executor.execute(() -> {
            if (!w.finished) {
                w.tick();
                w.ticks = executor.scheduleAtFixedRate(w::tick, period, period, TimeUnit.MILLISECONDS);
            }
        });
        return w;
    }

    private void tick() {
        if (finished) {
            return;
        }
        long now = System.nanoTime();
        Collection<Channel> live = streams.get();
        seen.keySet().retainAll(live);
        for (Channel stream : live) {
            if (!stream.isActive()) {
                continue;
            }
            long count = activity.applyAsLong(stream);
            long[] last = seen.get(stream);
            if (last == null || last[0] != count) {
                seen.put(stream, new long[] {count, now});
            } else if (now - last[1] >= idleNanos) {
                seen.remove(stream);
                cutIdle++;
                listener.cut(stream, "idle");
                stream.close();
            }
        }
    }

    /**
     * Ends the watch and reports every stream still open as cut at the drain's maximum (the caller closes them).
     * Safe from any thread; returns {idle cuts, cuts at the maximum}. Waits at most 2 s for the watch's executor.
     */
    public int[] finish() {
        Runnable end = () -> {
            if (finished) {
                return;
            }
            finished = true;
            if (ticks != null) {
                ticks.cancel(false);
            }
            for (Channel stream : streams.get()) {
                if (stream.isActive()) {
                    cutAtMaximum++;
                    listener.cut(stream, "drain_timeout");
                }
            }
        };
        if (executor.inEventLoop()) {
            end.run();
        } else {
            try {
                executor.submit(end).awaitUninterruptibly(2, TimeUnit.SECONDS);
            } catch (java.util.concurrent.RejectedExecutionException gone) {
                // the executor is shut down: nothing more to report
            }
        }
        return new int[] {cutIdle, cutAtMaximum};
    }
}
