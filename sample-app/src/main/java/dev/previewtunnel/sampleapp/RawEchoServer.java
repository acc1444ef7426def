package dev.previewtunnel.sampleapp;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.ReferenceCountUtil;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A raw TCP target for half-close tests. Each connection: read and count every byte until the peer shuts its
 * output down (FIN, seen as {@link ChannelInputShutdownEvent} because {@link ChannelOption#ALLOW_HALF_CLOSURE} is
 * on), then write back the received byte count as one ASCII line ({@code "12345\n"}) and close.
 * Nothing is written before the peer's FIN, which proves the FIN travelled end to end.
 */
public final class RawEchoServer implements AutoCloseable {
    private final EventLoopGroup group;
    private final Channel serverChannel;
    private final ConnectionCounter accepted = new ConnectionCounter();
    private final ConnectionCounter completed = new ConnectionCounter();
    private final AtomicBoolean closed = new AtomicBoolean();

    private RawEchoServer(String host, int port) {
        group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        ServerBootstrap b = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        accepted.increment();
                        ch.pipeline().addLast("count-until-fin", new CountingHandler());
                    }
                });
        Channel ch;
        try {
            ch = b.bind(host, port).syncUninterruptibly().channel();
        } catch (RuntimeException e) {
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
            throw SampleApp.bindFailure(host, port, e);
        }
        serverChannel = ch;
    }

    /** Binds on {@code host:port} ({@code port} 0 = ephemeral). */
    public static RawEchoServer start(String host, int port) {
        return new RawEchoServer(host, port);
    }

    public int port() {
        return address().getPort();
    }

    public InetSocketAddress address() {
        return (InetSocketAddress) serverChannel.localAddress();
    }

    /** Total TCP connections ever accepted. */
    public int acceptedConnections() {
        return accepted.get();
    }

    /** Connections whose peer half-closed and which were answered with the byte count. */
    public int completedExchanges() {
        return completed.get();
    }

    public boolean awaitAcceptedConnections(int n, Duration timeout) throws InterruptedException {
        return accepted.awaitAtLeast(n, timeout);
    }

    /** Idempotent; waits for the event loop group to terminate. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            group.terminationFuture().syncUninterruptibly();
            return;
        }
        serverChannel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private final class CountingHandler extends ChannelInboundHandlerAdapter {
        private long received;
        private boolean answered;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof ByteBuf) {
                    received += ((ByteBuf) msg).readableBytes();
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent && !answered) {
                answered = true;
                ByteBuf line = ByteBufUtil.writeAscii(ctx.alloc(), received + "\n");
                ctx.writeAndFlush(line).addListener((ChannelFutureListener) f -> {
                    if (f.isSuccess()) {
                        completed.increment();
                    }
                    f.channel().close();
                });
                return;
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
