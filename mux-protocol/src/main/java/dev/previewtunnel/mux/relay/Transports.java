package dev.previewtunnel.mux.relay;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;

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
            return new Transports("epoll", EpollIoHandler.newFactory(), EpollSocketChannel.class,
                    EpollServerSocketChannel.class);
        }
        return new Transports("nio", NioIoHandler.newFactory(), NioSocketChannel.class, NioServerSocketChannel.class);
    }

    public EventLoopGroup newGroup(int threads, String threadPrefix) {
        return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(threadPrefix, true), ioHandlerFactory);
    }
}
