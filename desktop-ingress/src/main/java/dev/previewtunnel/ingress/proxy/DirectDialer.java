package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.local.net.AddressClass;
import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.relay.SocketHalfCloseHandler;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.NetUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;

/**
 * Direct egress for sessions whose policy is {@code direct}: a public host reached from the desktop itself.
 * The name is resolved once, off the event loop; every answer must be a public address (never the desktop's
 * loopback, link-local, private or multicast ranges, including IPv4-mapped spellings and numeric host
 * spellings), and the checked address is the one dialed, so a DNS answer cannot change between check and use.
 * A name is judged by what it resolves to, so {@code rebind.example} answering 127.0.0.1 is refused like
 * 127.0.0.1 itself; only {@code localhost} and {@code *.localhost} are refused by name before any lookup
 * (RFC 6761: they are the desktop itself whatever a resolver answers).
 */
public final class DirectDialer {
    /** Name to addresses: the JDK's (system) resolver in production, a fixed answer in tests. */
    @FunctionalInterface
    interface Resolver {
        InetAddress[] resolve(String host) throws UnknownHostException;
    }

    private final Class<? extends SocketChannel> channelType;
    private final Executor blocking;
    private final Duration timeout;
    private final Resolver resolver;

    public DirectDialer(Class<? extends SocketChannel> channelType, Executor blocking, Duration timeout) {
        this(channelType, blocking, timeout, InetAddress::getAllByName);
    }

    DirectDialer(Class<? extends SocketChannel> channelType, Executor blocking, Duration timeout, Resolver resolver) {
        this.channelType = channelType;
        this.blocking = blocking;
        this.timeout = timeout;
        this.resolver = resolver;
    }

    /** A socket to {@code target} with auto-read off and half-closure allowed, or a typed failure. */
    Future<Channel> dial(EventLoop loop, Authority target) {
        Promise<Channel> promise = loop.newPromise();
        blocking.execute(() -> {
            InetAddress address;
            try {
                address = resolvePublic(target.host(), resolver);
            } catch (TunnelStreamException e) {
                promise.tryFailure(e);
                return;
            }
            loop.execute(() -> connect(loop, new InetSocketAddress(address, target.port()), promise));
        });
        return promise;
    }

    /**
     * The address to dial for {@code host}, or {@link TunnelError#POLICY_REFUSED} ({@code direct_not_public})
     * when the host is, or resolves to, anything but public addresses. Every answer is checked, not only the
     * one dialed: a resolver that mixes a public and a loopback answer is refused.
     */
    static InetAddress resolvePublic(String host, Resolver resolver) throws TunnelStreamException {
        byte[] literal = NetUtil.createByteArrayFromIpAddressString(host);
        if (isLocalName(host) || (literal == null && AddressClass.looksLikeNumericSpelling(host))) {
            throw new TunnelStreamException(TunnelError.POLICY_REFUSED, "direct_not_public");
        }
        InetAddress[] answers;
        try {
            answers = literal != null ? new InetAddress[] {InetAddress.getByAddress(literal)} : resolver.resolve(host);
        } catch (UnknownHostException e) {
            throw new TunnelStreamException(TunnelError.TARGET_UNREACHABLE, "direct_unresolvable");
        }
        if (answers == null || answers.length == 0) {
            throw new TunnelStreamException(TunnelError.TARGET_UNREACHABLE, "direct_unresolvable");
        }
        for (InetAddress a : answers) {
            if (AddressClass.of(a) != AddressClass.PUBLIC) {
                throw new TunnelStreamException(TunnelError.POLICY_REFUSED, "direct_not_public");
            }
        }
        return answers[0];
    }

    private void connect(EventLoop loop, InetSocketAddress address, Promise<Channel> promise) {
        ChannelFuture f = new Bootstrap().group(loop).channel(channelType)
                .option(ChannelOption.RCVBUF_ALLOCATOR, ReadBuffers.relayAllocator())
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) timeout.toMillis())
                .handler(SocketHalfCloseHandler.INSTANCE)
                .connect(address);
        f.addListener(x -> {
            if (f.isSuccess()) {
                if (!promise.trySuccess(f.channel())) {
                    f.channel().close();
                }
            } else {
                promise.tryFailure(new TunnelStreamException(TunnelError.TARGET_REFUSED,
                        "direct_connect_failed"));
            }
        });
    }

    /** Names that are the desktop itself, whatever DNS says. */
    static boolean isLocalName(String host) {
        String h = (host.endsWith(".") ? host.substring(0, host.length() - 1) : host).toLowerCase(Locale.ROOT);
        return h.equals("localhost") || h.endsWith(".localhost");
    }

    /** A dialer with the best transport's socket type and a small daemon pool for DNS. */
    public static DirectDialer standard(Duration timeout) {
        return new DirectDialer(Transports.best().socketChannel(), DNS_POOL, timeout);
    }

    private static final Executor DNS_POOL = Executors.newFixedThreadPool(2, r -> {
        Thread t = new Thread(r, "ptun-ingress-dns");
        t.setDaemon(true);
        return t;
    });
}
