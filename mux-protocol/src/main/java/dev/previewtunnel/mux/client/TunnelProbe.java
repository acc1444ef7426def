package dev.previewtunnel.mux.client;

import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.Future;

import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A diagnostic over the real {@link TunnelClient}, for the {@code doctor} commands: dial a gateway (TCP, TLS, the
 * upgrade with the token header, the HTTP/2 preface) and open a CONNECT stream with a grant, each answered with its
 * typed outcome instead of a hand-made HTTP client's guesses. Blocks the calling thread (a command's, never an event
 * loop); owns one event loop and every connection it dialed, all closed with the probe.
 */
public final class TunnelProbe implements AutoCloseable {
    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
            new DefaultThreadFactory("ptun-probe", true), NioIoHandler.newFactory());
    private final TunnelClient client = new TunnelClient(group, NioSocketChannel.class, MuxSettings.defaults());
    private final List<TunnelConnection> dialed = new ArrayList<>();
    private final Duration timeout;
    private final Clock clock;

    /**
     * @param timeout for the TCP connect, for the upgrade's answer, and for a stream open's answer
     * @param clock   stamps when the gateway's answer arrived, to compare with its Date header
     */
    public TunnelProbe(Duration timeout, Clock clock) {
        this.timeout = timeout;
        this.clock = clock;
    }

    /** One dial: the connection when the gateway accepted it, else the typed failure; and when that was known. */
    public record Dial(TunnelConnection connection, TunnelConnectException failure, Instant answeredAt) {
        public boolean accepted() {
            return connection != null;
        }

        /** What the gateway answered to the upgrade (a 101 or a refusal), or null when it did not answer. */
        public UpgradeAnswer answer() {
            return connection != null ? connection.upgrade() : failure.answer();
        }

        @Override
        public String toString() {
            return "Dial[accepted=" + accepted() + "]";
        }
    }

    /**
     * Dials {@code url} as the ingress does.
     *
     * @param token the connection token, or null to only ask whether a gateway answers there (it refuses with 401)
     * @param ssl   the client TLS context for {@code wss://}, else null
     */
    public Dial dial(URI url, String token, SslContext ssl) {
        Future<TunnelConnection> connecting = client.connect(url, token, ssl, timeout);
        if (!connecting.awaitUninterruptibly(timeout.toMillis() * 2)) {
            connecting.cancel(false); // closes its channel whatever stage it is at
            return new Dial(null, new TunnelConnectException(TunnelConnectException.Reason.NO_ANSWER,
                    "gateway did not answer within " + timeout.toMillis() + " ms"), clock.instant());
        }
        Instant answeredAt = clock.instant();
        if (connecting.isSuccess()) {
            TunnelConnection connection = connecting.getNow();
            dialed.add(connection);
            return new Dial(connection, null, answeredAt);
        }
        TunnelConnectException failure = connecting.cause() instanceof TunnelConnectException e ? e
                : new TunnelConnectException(String.valueOf(connecting.cause()));
        return new Dial(null, failure, answeredAt);
    }

    /**
     * Opens a CONNECT stream to {@code target} with {@code grant} and closes it at once. Returns null when it opened,
     * a {@link TimeoutException} when the gateway did not answer in time, else why it failed (a
     * {@link TunnelStreamException} for a typed refusal).
     */
    public Throwable openAndClose(TunnelConnection connection, Authority target, String grant) {
        Future<Http2StreamChannel> open = connection.openStream(target, grant, timeout);
        if (!open.awaitUninterruptibly(timeout.toMillis() * 2)) {
            open.cancel(false);
            return new TimeoutException("no answer to the stream open");
        }
        if (open.isSuccess()) {
            open.getNow().close().awaitUninterruptibly(timeout.toMillis());
            return null;
        }
        return open.cause();
    }

    @Override
    public void close() {
        for (TunnelConnection c : dialed) {
            c.channel().close().awaitUninterruptibly(timeout.toMillis());
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
}
