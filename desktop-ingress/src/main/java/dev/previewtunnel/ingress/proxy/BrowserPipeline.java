package dev.previewtunnel.ingress.proxy;

/** The names of the handlers {@link ProxyServer} installs on a browser connection that others look up or remove. */
final class BrowserPipeline {
    /** Netty's HTTP server codec: removed when the connection becomes a raw relay ({@link RelaySwitch}). */
    static final String HTTP_CODEC = "http";
    /** The {@link ProxyConnectionHandler}. */
    static final String PROXY = "proxy";

    private BrowserPipeline() {
    }
}
