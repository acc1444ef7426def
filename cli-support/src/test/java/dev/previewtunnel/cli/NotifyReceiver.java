package dev.previewtunnel.cli;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollDomainDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.unix.DomainDatagramPacket;
import io.netty.channel.unix.DomainSocketAddress;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * What systemd's end of NOTIFY_SOCKET is: a real AF_UNIX datagram socket (Netty's epoll transport) bound to a
 * path, or to an abstract name when the address starts with a NUL byte; each datagram received is queued as text.
 */
public final class NotifyReceiver implements AutoCloseable {
    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    private final BlockingQueue<String> messages = new LinkedBlockingQueue<>();
    private final Channel channel;

    public NotifyReceiver(String address) throws InterruptedException {
        channel = new Bootstrap().group(group).channel(EpollDomainDatagramChannel.class)
                .handler(new SimpleChannelInboundHandler<DomainDatagramPacket>() {
                    @Override
                    protected void channelRead0(ChannelHandlerContext ctx, DomainDatagramPacket packet) {
                        messages.add(packet.content().toString(StandardCharsets.UTF_8));
                    }
                })
                .bind(new DomainSocketAddress(address)).sync().channel();
    }

    /** The next datagram, waiting up to 20 s for it; fails when none came. */
    public String next() throws InterruptedException {
        String m = messages.poll(20, TimeUnit.SECONDS);
        if (m == null) {
            throw new AssertionError("no notification datagram arrived");
        }
        return m;
    }

    /** A datagram already received and not taken, else null (no waiting). */
    public String pending() {
        return messages.poll();
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
