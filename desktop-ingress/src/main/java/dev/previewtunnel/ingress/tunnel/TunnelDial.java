package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.mux.TunnelClient;
import dev.previewtunnel.mux.TunnelConnection;
import io.netty.channel.EventLoop;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.Future;

import java.net.URI;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * How a pool reaches its gateway: the client, the gateway's URL, where its connection token comes from (read
 * afresh for every attempt: a rotated token is used from the next reconnect on) and the TLS and timeout settings.
 */
record TunnelDial(TunnelClient client, URI url, Supplier<String> token, SslContext ssl, Duration connectTimeout) {

    /** One connect attempt on {@code loop}; cancel it to abandon it (its connection is closed). */
    Future<TunnelConnection> connect(EventLoop loop) {
        return client.connect(url, token.get(), ssl, connectTimeout, loop);
    }

    /** host:port of the gateway, for logs (never the token). */
    String shown() {
        return url.getHost() + ":" + url.getPort();
    }
}
