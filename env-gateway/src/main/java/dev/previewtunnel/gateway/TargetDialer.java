package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.relay.SocketHalfCloseHandler;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.concurrent.Promise;

import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * Dials a target's addresses in order (for {@code localhost}: 127.0.0.1, then ::1) on the stream's own event
 * loop, so the relay between stream and socket never hops threads. The socket comes back with auto-read off
 * and half-closure allowed, ready for a relay.
 */
final class TargetDialer {
    private final Class<? extends SocketChannel> channelType;
    private final Duration timeout;
    private final WriteBufferWaterMark waterMark;

    TargetDialer(Class<? extends SocketChannel> channelType, Duration timeout, WriteBufferWaterMark waterMark) {
        this.channelType = channelType;
        this.timeout = timeout;
        this.waterMark = waterMark;
    }

    Promise<Channel> dial(EventLoop loop, List<InetAddress> addresses, int port) {
        Promise<Channel> promise = loop.newPromise();
        attempt(loop, addresses, 0, port, promise, null);
        return promise;
    }

    private void attempt(EventLoop loop, List<InetAddress> addresses, int index, int port, Promise<Channel> promise,
                         Throwable last) {
        if (index >= addresses.size()) {
            promise.tryFailure(classify(last));
            return;
        }
        new Bootstrap()
                .group(loop)
                .channel(channelType)
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) timeout.toMillis())
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, waterMark)
                .option(ChannelOption.RCVBUF_ALLOCATOR, ReadBuffers.relayAllocator())
                .handler(SocketHalfCloseHandler.INSTANCE)
                .connect(new InetSocketAddress(addresses.get(index), port))
                .addListener(f -> {
                    if (f.isSuccess()) {
                        Channel ch = ((io.netty.channel.ChannelFuture) f).channel();
                        if (!promise.trySuccess(ch)) {
                            ch.close(); // the stream went away while dialing
                        }
                    } else {
                        attempt(loop, addresses, index + 1, port, promise, f.cause());
                    }
                });
    }

    private static TunnelStreamException classify(Throwable cause) {
        if (cause instanceof ConnectTimeoutException) {
            return new TunnelStreamException(TunnelError.DIAL_TIMEOUT, "target did not accept in time");
        }
        if (cause instanceof ConnectException) {
            return new TunnelStreamException(TunnelError.TARGET_REFUSED, "connection refused: nothing listening");
        }
        return new TunnelStreamException(TunnelError.TARGET_UNREACHABLE,
                cause == null ? "no address to dial" : cause.getClass().getSimpleName());
    }
}
