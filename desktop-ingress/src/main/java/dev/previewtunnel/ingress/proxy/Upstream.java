package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.mux.client.TunnelDraining;
import dev.previewtunnel.mux.local.FatalErrors;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.util.ReferenceCountUtil;

import java.util.Objects;

/**
 * The target side of absolute-form requests: a tunnel stream (or, for direct egress, a socket) speaking HTTP/1.1 to
 * the target (Netty's client codec over its bytes), on the browser connection's own event loop. What it decodes goes
 * straight to the {@link Listener} (the exchange in progress), with no hand-off; reads are asked for by that exchange
 * only while the browser is writable. Between exchanges (kept for the next request to the same target) it has no
 * listener and lets itself go on anything the target does: an answer nobody asked for, its end, a drain.
 */
final class Upstream {
    private static final String CODEC = "http";
    private static final String HANDLER = "upstream";

    /** What the exchange running on an upstream hears from it, on the shared event loop. */
    interface Listener {
        /** A decoded response part (or, after a 101, raw bytes); the listener owns {@code msg}. */
        void onResponsePart(Object msg);

        /** The read that produced the parts handed over before this has ended. */
        void onReadComplete();

        void onWritable();

        /** The target ended its side, after every part the decoder could still make of it. */
        void onInputEnded();

        /** The stream ended (reset, gateway lost, target closed); {@code cause} may be null. */
        void onClosed(Throwable cause);
    }

    final Channel channel;
    final Route route;
    private Listener listener;
    private boolean inputEnded;
    private boolean draining;

    /**
     * On the browser's loop: the upstream calls its listener directly (issue 18 section 2; the ingress pools keep
     * a browser connection's streams on its loop). Fails loudly, closing both, when a stream is on another loop.
     */
    Upstream(Channel channel, Route route, Channel browser) {
        if (channel.eventLoop() != browser.eventLoop()) {
            channel.close();
            browser.close();
            throw new IllegalStateException("an upstream on another event loop than its browser connection");
        }
        this.channel = channel;
        this.route = route;
        HttpDecoderConfig decoder = new HttpDecoderConfig()
                .setMaxInitialLineLength(8192)
                .setMaxHeaderSize(64 * 1024)
                .setMaxChunkSize(64 * 1024);
        channel.pipeline().addLast(CODEC, new HttpClientCodec(decoder, false, false));
        channel.pipeline().addLast(HANDLER, new Handler());
    }

    /** The exchange that runs on this upstream from now on; null while it is kept idle. */
    void listen(Listener next) {
        listener = next;
    }

    /**
     * Reusable for a next request when it is still open, of the same kind (a direct socket only for direct egress,
     * a tunnel stream only for a grant) to the same target under the same grant. A direct route has no grant.
     */
    boolean reusableFor(Route next) {
        return channel.isActive() && !inputEnded && !draining && next.target().equals(route.target())
                && Objects.equals(next.grant(), route.grant());
    }

    /** After a 101: remove the HTTP codec (its leftover bytes still reach the listener) and this handler. */
    void detachHttp() {
        if (channel.pipeline().get(CODEC) != null) {
            channel.pipeline().remove(CODEC);
        }
        if (channel.pipeline().get(HANDLER) != null) {
            channel.pipeline().remove(HANDLER);
        }
    }

    private final class Handler extends ChannelInboundHandlerAdapter {
        private boolean produced;
        private Throwable failure;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            produced = true;
            if (listener != null) {
                listener.onResponsePart(msg);
            } else {
                // Nothing was asked: a target speaking out of turn (a 408 before it closes an idle connection).
                // Its stream cannot be trusted with the next request.
                ReferenceCountUtil.release(msg);
                ctx.close();
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (!produced) {
                ctx.read(); // the decoder needs more bytes before it can hand anything on
            } else if (listener != null) {
                // After this read's parts: the exchange flushes them together and asks for more.
                listener.onReadComplete();
            }
            produced = false;
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable() && listener != null) {
                listener.onWritable();
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
            if (evt instanceof ChannelInputShutdownEvent) {
                // The target ended its side. Whatever the decoder could still make of it (the end of a body
                // delimited by the close) was handed over before this event got here. Idle, its other half would
                // otherwise stay open for good; the next request opens a fresh stream.
                inputEnded = true;
                if (listener != null) {
                    listener.onInputEnded();
                } else {
                    ctx.close();
                }
            } else if (evt instanceof TunnelDraining) {
                // The gateway is draining this tunnel connection: the exchange in progress finishes, no idle stream
                // is kept on it (the next request opens one on the fresh connection).
                draining = true;
                if (listener == null) {
                    ctx.close();
                }
                return;
            }
            super.userEventTriggered(ctx, evt);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (listener != null) {
                listener.onClosed(failure);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            FatalErrors.check(cause); // an Error means the process, not this connection, is broken
            failure = cause;
            ctx.close();
        }
    }
}
