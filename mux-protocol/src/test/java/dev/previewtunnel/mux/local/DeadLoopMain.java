package dev.previewtunnel.mux.local;

import dev.previewtunnel.mux.relay.Transports;
import io.netty.channel.EventLoopGroup;

import java.util.concurrent.TimeUnit;

/**
 * A program for {@link FatalErrorsTest}: installs {@link FatalErrors} as the mains do, watches a group, then one of
 * its loops terminates while the program is not stopping (as when an Error escapes a loop's run loop). It must be
 * halted; if not, it exits 0 after 30 s on its own.
 */
public final class DeadLoopMain {
    public static void main(String[] args) throws Exception {
        FatalErrors.install();
        EventLoopGroup group = Transports.best().newGroup(2, "dead-loop");
        FatalErrors.watch(group, () -> false);
        group.next().submit(() -> { }).sync(); // the loop has started
        group.next().shutdownGracefully(0, 0, TimeUnit.SECONDS); // one loop ends; the group is not shutting down
        Thread.sleep(30_000);
        System.exit(0);
    }
}
