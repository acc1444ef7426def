package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnectException;
import dev.previewtunnel.mux.client.TunnelConnection;
import io.netty.channel.EventLoop;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.Future;

import java.net.URI;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * How a pool reaches its gateway: the client, the gateway's URL, where its connection token comes from (read
 * afresh for every attempt: a rotated token is used from the next reconnect on) and the TLS and timeout settings.
 * No token (null) means the way to the gateway is known to be down: nothing is dialled, so whoever holds the
 * address meanwhile (a local port another process may take while an SSH forward is gone) gets neither the token
 * nor a browser's request.
 */
record TunnelDial(TunnelClient client, URI url, Supplier<String> token, SslContext ssl, Duration connectTimeout) {

    /** One connect attempt on {@code loop}; cancel it to abandon it (its connection is closed). */
    Future<TunnelConnection> connect(EventLoop loop) {
        String current = token.get();
        if (current == null) {
            return loop.newFailedFuture(new TunnelConnectException(TunnelConnectException.Reason.UNREACHABLE,
                    "the way to the gateway is down; not dialling " + shown()));
        }
        return client.connect(url, current, ssl, connectTimeout, loop);
    }

    /** host:port of the gateway, for logs (never the token). */
    String shown() {
        return url.getHost() + ":" + url.getPort();
    }
}
