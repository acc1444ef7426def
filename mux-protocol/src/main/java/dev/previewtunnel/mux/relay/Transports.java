package dev.previewtunnel.mux.relay;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerDomainSocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;

/**
 * Chooses the native epoll transport when it loads on this machine and NIO otherwise, so one jar runs
 * everywhere. {@code -Dptun.transport=nio} forces NIO (for comparisons and for debugging).
 */
public record Transports(String name, IoHandlerFactory ioHandlerFactory,
                         Class<? extends SocketChannel> socketChannel,
                         Class<? extends ServerSocketChannel> serverSocketChannel) {

    public static Transports best() {
        boolean forceNio = "nio".equalsIgnoreCase(System.getProperty("ptun.transport"));
        if (!forceNio && Epoll.isAvailable()) {
            return new Transports("epoll", EpollStayRegistered.newFactory(), EpollSocketChannel.class,
                    EpollServerSocketChannel.class);
        }
        return nio();
    }

    /** The JDK's NIO transport, on any platform: what {@link #best()} falls back to. */
    public static Transports nio() {
        return new Transports("nio", NioIoHandler.newFactory(), NioSocketChannel.class, NioServerSocketChannel.class);
    }

    /** The server channel that listens on a Unix domain socket with this transport. */
    public Class<? extends ServerChannel> serverDomainSocketChannel() {
        return epoll() ? EpollServerDomainSocketChannel.class : NioServerDomainSocketChannel.class;
    }

    /**
     * {@code socket} in the form this transport binds: epoll takes Netty's own DomainSocketAddress, NIO (JDK 16+
     * Unix sockets) the JDK's UnixDomainSocketAddress.
     */
    public SocketAddress domainSocketAddress(UnixDomainSocketAddress socket) {
        return epoll() ? new DomainSocketAddress(socket.getPath().toString()) : socket;
    }

    private boolean epoll() {
        return "epoll".equals(name);
    }

    public EventLoopGroup newGroup(int threads, String threadPrefix) {
        return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(threadPrefix, true), ioHandlerFactory);
    }
}
