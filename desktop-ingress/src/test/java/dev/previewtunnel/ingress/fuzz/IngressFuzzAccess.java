package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.SocketHalfCloseHandler;
import io.netty.channel.Channel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpServerCodec;

/**
 * Test-only bridge (test sources, package {@code dev.previewtunnel.ingress.proxy}, kept next to the fuzz test that
 * uses it; UpstreamResponseTest uses it too) to the package-private {@link ProxyConnectionHandler}: installs on any
 * channel exactly the browser-side pipeline {@code ProxyServer}'s child initializer installs on an accepted socket.
 */
public final class IngressFuzzAccess {
    private IngressFuzzAccess() {
    }

    /**
     * Mirror of {@code ProxyServer}'s {@code initChannel}: same handlers, names, order and decoder limits (the
     * connection budget, counted at accept by the listener, is not part of a channel's pipeline).
     */
    public static void install(Channel ch, IngressContext context) {
        HttpDecoderConfig decoder = new HttpDecoderConfig()
                .setMaxInitialLineLength(8192)
                .setMaxHeaderSize(context.config().maxRequestHead())
                .setMaxChunkSize(64 * 1024);
        RequestBodyDeadline body = new RequestBodyDeadline(context.config().browserLimits().bodyIdleTimeout());
        ch.pipeline().addLast(RequestBodyDeadline.BYTES, body.bytes());
        ch.pipeline().addLast("half-close", SocketHalfCloseHandler.INSTANCE);
        ch.pipeline().addLast(ProxyConnectionHandler.HTTP_CODEC, new HttpServerCodec(decoder));
        ch.pipeline().addLast(RequestBodyDeadline.MESSAGES, body.messages());
        ch.pipeline().addLast(ProxyConnectionHandler.NAME, new ProxyConnectionHandler(context));
    }
}
