package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.codec.MuxPipeline;
import io.netty.channel.Channel;
import io.netty.handler.codec.http2.Http2FrameCodec;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Closes (with GOAWAY) a tunnel connection that has carried no stream for the idle timeout. The ingress
 * reopens connections on demand, so an idle desktop does not pin gateway resources forever.
 */
final class IdleConnectionReaper {
    private IdleConnectionReaper() {
    }

    static void watch(Channel parent, Duration idleTimeout) {
        long checkMillis = Math.max(100, Math.min(idleTimeout.toMillis() / 4, 30_000));
        long[] idleSince = {System.nanoTime()};
        Runnable[] check = new Runnable[1];
        check[0] = () -> {
            if (!parent.isActive()) {
                return;
            }
            Http2FrameCodec codec = (Http2FrameCodec) parent.pipeline().get(MuxPipeline.CODEC);
            if (codec != null && codec.connection().numActiveStreams() > 0) {
                idleSince[0] = System.nanoTime();
            } else if (System.nanoTime() - idleSince[0] >= idleTimeout.toNanos()) {
                parent.close();
                return;
            }
            parent.eventLoop().schedule(check[0], checkMillis, TimeUnit.MILLISECONDS);
        };
        parent.eventLoop().schedule(check[0], checkMillis, TimeUnit.MILLISECONDS);
    }
}
