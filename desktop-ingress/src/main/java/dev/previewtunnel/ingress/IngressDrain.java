package dev.previewtunnel.ingress;

import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.relay.ByteActivity;
import dev.previewtunnel.mux.relay.DrainWatch;
import io.netty.channel.Channel;
import io.netty.util.concurrent.EventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Collection;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The ingress's drain by activity ({@link DrainWatch} over the browser connections): a browser connection that
 * moves bytes may go on within the drain's maximum ({@code --drain-timeout}); one idle for
 * {@code --drain-idle-timeout} (an idle keep-alive, a quiet WebSocket) is closed at once. Each cut is an audit line
 * {@code drain_cut} (the browser's port, reason {@code idle} or {@code drain_timeout}, bytes so far), the drain ends
 * with {@code drain_finished}.
 */
final class IngressDrain {
    private static final Logger log = LoggerFactory.getLogger(IngressDrain.class);

    private final AuditLog audit = new AuditLog("ingress");
    private final DrainWatch watch;
    private final int atStart;
    private final long startNanos = System.nanoTime();

    private IngressDrain(Supplier<Collection<Channel>> browsers, Duration idle, EventExecutor executor) {
        this.atStart = browsers.get().size();
        this.watch = DrainWatch.start(browsers, ByteActivity::of, idle, this::cut, executor);
    }

    static IngressDrain start(Supplier<Collection<Channel>> browsers, Duration idle, EventExecutor executor) {
        return new IngressDrain(browsers, idle, executor);
    }

    private void cut(Channel browser, String reason) {
        audit.event(IngressAuditEvent.DRAIN_CUT)
                .put("browserPort", browser.remoteAddress() instanceof InetSocketAddress a ? a.getPort() : -1)
                .put("reason", reason)
                .put("bytes", ByteActivity.of(browser))
                .write();
    }

    /** Ends the drain: what is still open is reported as cut at the maximum (the caller closes it). */
    void finish() {
        int[] cut = watch.finish();
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
        int finished = Math.max(0, atStart - cut[0] - cut[1]);
        audit.event(IngressAuditEvent.DRAIN_FINISHED).put("browserConnections", atStart).put("finished", finished)
                .put("cutIdle", cut[0]).put("cutAtMaximum", cut[1]).put("millis", millis).write();
        log.atInfo().setMessage("drain over after {} ms: {} of {} browser connections finished, {} cut idle, {} cut "
                        + "at the drain maximum")
                .addArgument(millis).addArgument(finished).addArgument(atStart).addArgument(cut[0])
                .addArgument(cut[1])
                .addKeyValue("event", "drain_finished")
                .log();
    }
}
