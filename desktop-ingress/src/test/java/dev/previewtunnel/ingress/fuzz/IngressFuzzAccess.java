package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.SocketHalfCloseHandler;
import io.netty.channel.Channel;

/**
 * Test-only bridge (test sources, package {@code dev.previewtunnel.ingress.proxy}, kept next to the fuzz test that
 * uses it; UpstreamResponseTest uses it too) to the package-private {@link ProxyConnectionHandler}: installs on any
 * channel exactly the browser-side pipeline {@code ProxyServer}'s child initializer installs on an accepted socket.
 */
public final class IngressFuzzAccess {
    private IngressFuzzAccess() {
    }

    /** Mirror of {@code ProxyServer}'s {@code initChannel}: same handlers, names, order and decoder limits. */
    public static void install(Channel ch, IngressContext context) {
        ch.pipeline().addLast("half-close", SocketHalfCloseHandler.INSTANCE);
        ch.pipeline().addLast(ProxyConnectionHandler.HTTP_CODEC,
                RequestFraming.browserCodec(context.config().maxRequestHead()));
        ch.pipeline().addLast(ProxyConnectionHandler.NAME, new ProxyConnectionHandler(context));
    }
}
