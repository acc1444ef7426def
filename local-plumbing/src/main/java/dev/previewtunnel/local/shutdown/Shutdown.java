package dev.previewtunnel.local.shutdown;

import io.netty.channel.Channel;
import io.netty.util.concurrent.EventExecutorGroup;
import io.netty.util.concurrent.Future;

import java.util.concurrent.TimeUnit;

/**
 * How the programs stop their event loops and channels: no quiet period (a stopping program accepts no new work, so
 * waiting for "no more tasks" only delays it), and every wait bounded, so a wedged loop cannot hang a stop or a
 * signal handler. The owner closes its channels before the group: with no quiet period Netty 4.2 does not reliably
 * close the channels still registered on a stopping loop.
 */
public final class Shutdown {
    /** Longest a caller waits for a group's threads or a channel's close. */
    static final long WAIT_SECONDS = 5;
    /** Netty's timeout for tasks submitted while stopping; irrelevant with no quiet period but for a busy loop. */
    private static final long TASK_TIMEOUT_SECONDS = 2;

    private Shutdown() {
    }

    /** Starts stopping {@code group} and returns at once (a failed start, cleanup on an error path). */
    public static Future<?> begin(EventExecutorGroup group) {
        return group.shutdownGracefully(0, TASK_TIMEOUT_SECONDS, TimeUnit.SECONDS);
    }

    /** Stops {@code group} and waits for its threads to end, at most {@link #WAIT_SECONDS}; true if they did. */
    public static boolean andWait(EventExecutorGroup group) {
        return begin(group).awaitUninterruptibly(WAIT_SECONDS, TimeUnit.SECONDS);
    }

    /** Closes {@code channel} and waits for the close, at most {@link #WAIT_SECONDS}; true if it closed. */
    public static boolean close(Channel channel) {
        return channel.close().awaitUninterruptibly(WAIT_SECONDS, TimeUnit.SECONDS);
    }
}
