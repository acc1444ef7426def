package dev.previewtunnel.mux.codec;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes a connection whose peer leaves more than {@code limit} bytes of our writes unread (Netty's own estimate
 * of the outbound buffer: payload plus a per-message overhead).
 *
 * <p>Why a cap is enough: what we send on our own initiative is already bounded before it reaches the socket (relayed
 * data by flow-control windows and read-on-demand, and the HTTP/2 flow controller writes only while the channel is
 * writable), so only answers the peer provokes can grow without bound: WebSocket PONGs, HTTP/2 PING and SETTINGS
 * ACKs, RST_STREAMs, refusal pages. A peer that provokes them and never reads is closed here, once its backlog
 * passes a limit sized far above what backpressured traffic ever queues.
 *
 * <p>Why not stop reading while unwritable instead: if both ends did that on one connection, each would wait for the
 * other to read first and the connection would deadlock (and DESIGN.md keeps the tunnel connection's auto-read on for
 * per-stream backpressure). The cap never stops a read, so it cannot deadlock; it only ends a peer that does not read.
 *
 * <p>Installed first in the pipeline (next to the socket), so every write passes it, encrypted or not, and its close
 * goes straight to the socket instead of through the HTTP/2 codec's graceful shutdown, which would queue a GOAWAY
 * behind the backlog and wait for it.
 */
final class WriteBacklogLimit extends ChannelOutboundHandlerAdapter {
    static final String NAME = "ptun-write-backlog";
    private static final Logger log = LoggerFactory.getLogger(WriteBacklogLimit.class);

    private final long limit;
    private boolean closing;

    private WriteBacklogLimit(long limit) {
        if (limit <= 0) {
            throw new IllegalArgumentException("write backlog limit must be positive, was " + limit);
        }
        this.limit = limit;
    }

    /** Installs the limit on {@code channel}, ahead of every handler already there (TLS included). */
    static void install(Channel channel, long limit) {
        channel.pipeline().addFirst(NAME, new WriteBacklogLimit(limit));
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        ctx.write(msg, promise);
        if (closing) {
            return;
        }
        ChannelOutboundBuffer buffer = ctx.channel().unsafe().outboundBuffer();
        long backlog = buffer == null ? 0 : buffer.totalPendingWriteBytes();
        if (backlog > limit) {
            closing = true;
            log.info("closing connection {}: the peer left {} bytes unread (limit {})",
                    ctx.channel().remoteAddress(), backlog, limit);
            ctx.close(); // releases what is queued and fails its promises
        }
    }
}
