package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.relay.DrainWatch;
import dev.previewtunnel.mux.relay.RelayHandler;
import io.netty.channel.Channel;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.EventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The gateway's drain by activity ({@link DrainWatch}): streams moving bytes may finish within the drain's maximum
 * ({@code --drain-timeout}); a stream idle for {@code --drain-idle-timeout} is cut at once. Every cut stream is
 * an audit line {@code drain_cut} (session, grant id, target, reason {@code idle} or {@code drain_timeout}, bytes),
 * and the drain ends with {@code drain_finished}: how many streams there were, finished, and were cut.
 */
final class GatewayDrain {
    private static final Logger log = LoggerFactory.getLogger(GatewayDrain.class);

    private final GatewayContext context;
    private final DrainWatch watch;
    private final int streamsAtStart;
    private final long startNanos = System.nanoTime();

    private GatewayDrain(GatewayContext context, Duration idle, EventExecutor executor) {
        this.context = context;
        this.streamsAtStart = context.liveStreams().all().size();
        this.watch = DrainWatch.start(() -> context.liveStreams().all(), GatewayDrain::activity, idle, this::cut,
                executor);
    }

    static GatewayDrain start(GatewayContext context, Duration idle, EventExecutor executor) {
        return new GatewayDrain(context, idle, executor);
    }

    private static long activity(Channel stream) {
        RelayHandler relay = stream.pipeline().get(RelayHandler.class);
        return relay == null ? 0 : relay.bytesBothWays();
    }

    private void cut(Channel stream, String reason) {
        LiveStreams.Described d = context.liveStreams().describe(stream);
        context.audit().event(GatewayAuditEvent.DRAIN_CUT)
                .put("conn", d == null ? null : d.connection())
                .put("stream", stream instanceof Http2StreamChannel h ? Integer.toString(h.stream().id()) : null)
                .put("session", d == null ? null : d.session())
                .put("jti", d == null ? null : d.jti())
                .put("target", d == null ? null : d.target())
                .put("reason", reason)
                .put("bytes", activity(stream))
                .write();
    }

    /** Ends the drain: reports the streams still open as cut at the maximum, and the drain's summary. */
    void finish() {
        int[] cut = watch.finish();
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
        int finished = Math.max(0, streamsAtStart - cut[0] - cut[1]);
        context.audit().event(GatewayAuditEvent.DRAIN_FINISHED)
                .put("streams", streamsAtStart)
                .put("finished", finished)
                .put("cutIdle", cut[0])
                .put("cutAtMaximum", cut[1])
                .put("millis", millis)
                .write();
        log.atInfo().setMessage("drain over after {} ms: {} of {} streams finished, {} cut idle, {} cut at the "
                        + "drain maximum")
                .addArgument(millis).addArgument(finished).addArgument(streamsAtStart).addArgument(cut[0])
                .addArgument(cut[1])
                .addKeyValue("event", "drain_finished")
                .log();
    }
}
