package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.sampleapp.SampleApp;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.ReferenceCountUtil;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A raw TCP target that sends {@code total} bytes of the sample app's pattern to whoever connects, writing only
 * while its socket is writable, and counts the bytes the kernel has accepted. With a stalled reader at the
 * other end of the tunnel, {@link #written()} minus what the reader received is what the tunnel (and the
 * sockets between) hold.
 */
final class RawSourceServer implements AutoCloseable {
    private static final int CHUNK = 64 * 1024;
    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final Channel server;
    private final long total;
    private final AtomicLong written = new AtomicLong();
    private volatile Channel child;

    RawSourceServer(long total) throws InterruptedException {
        this(total, 0);
    }

    /** With {@code sendBuffer} > 0, the target's socket send buffer is fixed to that size (SO_SNDBUF). */
    RawSourceServer(long total, int sendBuffer) throws InterruptedException {
        this.total = total;
        ServerBootstrap b = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class);
        if (sendBuffer > 0) {
            b.childOption(ChannelOption.SO_SNDBUF, sendBuffer);
        }
        server = b
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new Writer());
                    }
                }).bind("127.0.0.1", 0).sync().channel();
    }

    int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    long written() {
        return written.get();
    }

    /** The accepted connection (the last one), or null before one arrived. */
    Channel connection() {
        return child;
    }

    /**
     * True while the target cannot write: its socket send buffer is full and its own outbound buffer is above the
     * high-water mark, i.e. whoever reads it (the gateway) has stopped reading.
     */
    boolean blocked() {
        Channel c = child;
        return c != null && c.isActive() && !c.isWritable();
    }

    private final class Writer extends ChannelInboundHandlerAdapter {
        private long offset;

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            child = ctx.channel();
            writeWhileWritable(ctx);
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            writeWhileWritable(ctx);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
        }

        private void writeWhileWritable(ChannelHandlerContext ctx) {
            byte[] tmp = new byte[CHUNK];
            while (ctx.channel().isWritable() && offset < total) {
                int n = (int) Math.min(CHUNK, total - offset);
                SampleApp.fillPattern(offset, tmp, n);
                ByteBuf buf = ctx.alloc().buffer(n).writeBytes(tmp, 0, n);
                offset += n;
                ctx.writeAndFlush(buf).addListener(f -> {
                    if (f.isSuccess()) {
                        written.addAndGet(n);
                    }
                });
            }
            if (offset >= total) {
                ctx.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER)
                        .addListener(io.netty.channel.ChannelFutureListener.CLOSE);
                offset = Long.MAX_VALUE; // done
            }
        }
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
