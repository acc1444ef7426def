package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.IngressAuditEvent;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.relay.OutputShutdown;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufHolder;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http2.Http2StreamChannel;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bookkeeping of one opened stream (a tunnel stream or, for direct egress, a socket), whatever it carries
 * (a CONNECT relay, absolute-form exchanges, an upgrade turned raw): one {@code stream_opened} line and one
 * session count when it opens, and exactly one {@code stream_closed} line (bytes both ways, duration, why) and
 * the count given back when the stream's channel closes. The channel's close is the single place every ending
 * path goes through (browser gone, target gone, reset, tunnel lost, session closed, refusal, drain), so no
 * handler has to remember to account for it; the {@link #closed} flag makes that account happen once.
 *
 * <p>Installed in the stream's pipeline before the handlers that move its bytes, it sees every byte the target
 * sent and every byte written towards it, and learns from what passes which side ended first. {@code why} is one
 * of {@link #WHY_VALUES}.
 */
final class StreamRecord extends ChannelDuplexHandler {
    static final String NAME = "ptun-stream-record";
    /** Every value {@code why} takes; docs/operations.md lists the same set. */
    static final List<String> WHY_VALUES = List.of("completed", "browser_closed",
            "target_closed", "reset", "tunnel_lost", "released", BrowserSession.SESSION_CLOSED,
            BrowserSession.GRANT_DETACHED, BrowserSession.SHUTDOWN);

    private static final AtomicLong IDS = new AtomicLong();

    private final AuditLog audit;
    private final BrowserSession session;
    private final Route route;
    private final String kind;
    private final Channel browser;
    private final long openedAt = System.nanoTime();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** An ingress-wide id, so that each stream_closed can be paired with its stream_opened. */
    private final String id = "s" + IDS.incrementAndGet();
    /** A reason the ingress gave when it ended the stream itself; the first one stays. */
    private volatile String given;
    // Written and read on the stream's loop only (the close listener runs there as well).
    private long toTarget;
    private long fromTarget;
    private boolean inputEnded;
    private boolean outputEnded;
    private boolean closedHere;
    private boolean failed;

    private StreamRecord(AuditLog audit, BrowserSession session, Route route, String kind, Channel browser) {
        this.audit = audit;
        this.session = session;
        this.route = route;
        this.kind = kind;
        this.browser = browser;
    }

    /**
     * Writes {@code stream_opened}, counts the stream against the session and arranges the one {@code
     * stream_closed}. Call it as soon as the open succeeded (whether the stream is then used or closed at once),
     * before any handler that moves its bytes is added.
     */
    static StreamRecord open(AuditLog audit, BrowserSession session, Route route, String kind, Channel browser,
                             Channel stream) {
        StreamRecord record = new StreamRecord(audit, session, route, kind, browser);
        stream.pipeline().addLast(NAME, record); // after the byte adapter: sees bytes, FIN and resets as bytes
        session.streamOpened();
        record.line(IngressAuditEvent.STREAM_OPENED).write();
        stream.closeFuture().addListener(f -> record.close(stream)); // runs on the stream's loop
        return record;
    }

    /** Ends the stream for a reason the ingress knows better than what the stream saw. */
    void end(String why, Channel stream) {
        if (given == null) {
            given = why;
        }
        stream.close();
    }

    private void close(Channel stream) {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        session.streamClosed();
        line(IngressAuditEvent.STREAM_CLOSED)
                .put("bytesToTarget", toTarget)
                .put("bytesFromTarget", fromTarget)
                .put("durationMillis", (System.nanoTime() - openedAt) / 1_000_000)
                .put("why", why(stream))
                .write();
    }

    /**
     * Which side ended it, judged from what was seen: a reason the ingress gave the browser connection when it
     * closed it (session closed, grant detached, shutdown), else both directions ended cleanly, else the target's
     * end, else the browser gone first, else the ingress letting the stream go, else a reset or a lost
     * tunnel connection.
     */
    private String why(Channel stream) {
        if (given != null) {
            return given;
        }
        String reason = browser.attr(BrowserSession.CLOSE_REASON).get();
        if (reason != null) {
            return reason;
        }
        // What was seen to end decides before the browser's state at close time: once both directions ended (or
        // the target's did), the relay closes the browser itself, so an inactive browser then says nothing of who
        // ended first (a race the suite saw as browser_closed after the target's FIN).
        if (inputEnded && outputEnded) {
            return "completed";
        }
        if (inputEnded) {
            return "target_closed";
        }
        if (!browser.isActive()) {
            return "browser_closed";
        }
        if (closedHere && !failed) {
            return "released";
        }
        if (stream instanceof Http2StreamChannel s && !s.parent().isActive()) {
            return "tunnel_lost";
        }
        return "reset";
    }

    private AuditLog.Event line(IngressAuditEvent event) {
        return audit.event(event)
                .put("stream", id)
                .put("kind", route.grant() == null ? "direct-" + kind : kind)
                .put("session", session.id())
                .put("authority", route.requested().toString())
                .put("target", route.target().toString())
                .put("grant", route.grantId());
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        fromTarget += readable(msg);
        ctx.fireChannelRead(msg);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof ChannelInputShutdownEvent) {
            inputEnded = true;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        failed = true;
        ctx.fireExceptionCaught(cause);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof OutputShutdown) {
            outputEnded = true;
        }
        toTarget += readable(msg);
        ctx.write(msg, promise);
    }

    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
        closedHere = true;
        ctx.close(promise);
    }

    private static long readable(Object msg) {
        if (msg instanceof ByteBuf buf) {
            return buf.readableBytes();
        }
        if (msg instanceof ByteBufHolder holder) {
            return holder.content().readableBytes();
        }
        return 0;
    }
}
