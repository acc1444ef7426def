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

/**
 * The target side of absolute-form requests: a tunnel stream (or, for direct egress, a socket) speaking
 * HTTP/1.1 to the target (Netty's client codec over its bytes). Decoded response parts are handed to the browser
 * connection's loop one by one, then the end of the read that produced them; reads are requested by the browser
 * side only while the browser is writable.
 */
final class Upstream {
    private static final String CODEC = "http";
    private static final String HANDLER = "upstream";

    final Channel channel;
    final Route route;
    private final ProxyConnectionHandler front;
    private final Channel browser;
    private volatile boolean inputEnded;
    private volatile boolean draining;

    Upstream(Channel channel, Route route, ProxyConnectionHandler front, Channel browser) {
        this.channel = channel;
        this.route = route;
        this.front = front;
        this.browser = browser;
        HttpDecoderConfig decoder = new HttpDecoderConfig()
                .setMaxInitialLineLength(8192)
                .setMaxHeaderSize(64 * 1024)
                .setMaxChunkSize(64 * 1024);
        channel.pipeline().addLast(CODEC, new HttpClientCodec(decoder, false, false));
        channel.pipeline().addLast(HANDLER, new Handler());
    }

    /** Reusable for a next request when it is still open, to the same target, under the same grant. */
    boolean reusableFor(Route next) {
        return channel.isActive() && !inputEnded && !draining && next.target().equals(route.target())
                && next.grant().equals(route.grant());
    }

    /** After a 101: remove the HTTP codec (its leftover bytes still reach the browser) and this handler. */
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
            browser.eventLoop().execute(() -> front.onUpstreamMessage(Upstream.this, msg));
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (produced) {
                // After this read's parts, in order: the browser side flushes them together and asks for more.
                browser.eventLoop().execute(() -> front.onUpstreamReadComplete(Upstream.this));
            } else {
                ctx.read(); // the decoder needs more bytes before it can hand anything on
            }
            produced = false;
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                browser.eventLoop().execute(() -> front.onUpstreamWritable(Upstream.this));
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
            if (evt instanceof ChannelInputShutdownEvent) {
                // The target ended its side. Whatever the decoder could still make of it (the end of a body
                // delimited by the close) was handed over before this event got here.
                inputEnded = true;
                browser.eventLoop().execute(() -> front.onUpstreamInputEnded(Upstream.this));
            } else if (evt instanceof TunnelDraining) {
                // The gateway is draining this tunnel connection: finish the exchange in progress, keep no
                // idle stream open on it (the next request opens one on the fresh connection).
                draining = true;
                browser.eventLoop().execute(() -> front.onUpstreamDraining(Upstream.this));
                return;
            }
            super.userEventTriggered(ctx, evt);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            Throwable cause = failure;
            browser.eventLoop().execute(() -> front.onUpstreamClosed(Upstream.this, cause));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            FatalErrors.check(cause); // an Error means the process, not this connection, is broken
            failure = cause;
            ctx.close();
        }
    }
}
