package dev.previewtunnel.ingress.proxy;

import io.netty.channel.Channel;

/**
 * Test-only bridge (test sources, package {@code dev.previewtunnel.ingress.proxy}, kept next to the fuzz test that
 * uses it; UpstreamResponseTest uses it too) to the package-private {@link ProxyConnectionHandler}: installs on any
 * channel exactly the browser-side pipeline {@code ProxyServer}'s child initializer installs on an accepted socket.
 */
public final class IngressFuzzAccess {
    private IngressFuzzAccess() {
    }

    /** {@code ProxyServer}'s browser pipeline (the connection budget, counted at accept, is not part of it). */
    public static void install(Channel ch, IngressContext context) {
        ProxyServer.installBrowserPipeline(ch, context);
    }
}
