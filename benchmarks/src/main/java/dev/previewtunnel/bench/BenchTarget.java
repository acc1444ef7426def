package dev.previewtunnel.bench;

import dev.previewtunnel.mux.relay.Transports;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.ReferenceCountUtil;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * The benchmark's TCP target, run as its own JVM. Listens on {@code --ports N} loopback ports (one grant and one
 * {@code ssh -L} forward per port) and speaks a tiny protocol on every connection:
 *
 * <ol>
 *   <li>on accept it sends one byte {@code 'H'}: the "first byte from the target" of the stream-open figure;</li>
 *   <li>it then reads a 9-byte command: an op byte and a big-endian long argument:
 *     <ul>
 *       <li>{@code 'E'}: echo every byte back until EOF (ping-pong);</li>
 *       <li>{@code 'S'}: send {@code arg} bytes ({@code -1}: endlessly) as fast as the socket takes them, then
 *           half-close; any byte the client sends meanwhile stops the source early, also with a half-close, so
 *           that clients end busy streams gracefully (bulk download, fairness, head-of-line, slow reader);</li>
 *       <li>{@code 'K'}: read and count {@code arg} bytes, then send the count back as 8 bytes (bulk upload).</li>
 *     </ul></li>
 * </ol>
 *
 * Prints one JSON line {@code {"event":"ready","ports":[...],"transport":"epoll"}} on stdout when listening.
 */
public final class BenchTarget {
    static final byte HELLO = 'H';
    static final byte ECHO = 'E';
    static final byte SOURCE = 'S';
    static final byte SINK = 'K';
    /** SOURCE for many-stream figures: the socket's send buffer is capped first (see {@link #MANY_STREAM_BUFFER}). */
    static final byte SOURCE_SMALL_BUFFER = 's';
    /**
     * Kernel socket buffer for the endpoints of the many-stream figures (this side's send buffer, the client's
     * receive buffer). With Linux autotuning (tcp_rmem max 32 MiB here) 1,000 busy loopback connections push the
     * kernel's TCP memory past net.ipv4.tcp_mem's pressure mark and streams starve for reasons that have nothing
     * to do with the path being measured.
     */
    static final int MANY_STREAM_BUFFER = 128 * 1024;
    static final int COMMAND_BYTES = 9;
    private static final int CHUNK = 64 * 1024;

    private BenchTarget() {
    }

    public static void main(String[] args) throws Exception {
        int ports = 1;
        int threads = 2;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--ports" -> ports = Integer.parseInt(args[++i]);
                case "--threads" -> threads = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        // The programs' transport, Netty's epoll handler fixed for sockets that ask for no event (finding 56):
        // this target half-closes and writes after its peer's FIN.
        Transports transports = Transports.best();
        EventLoopGroup group = transports.newGroup(threads, "bench-target"); // daemon threads: main waits below
        // One read-only 64 KiB direct chunk, written again and again: the target itself costs no copies.
        ByteBuf chunk = Unpooled.unreleasableBuffer(Unpooled.directBuffer(CHUNK).writeZero(CHUNK).asReadOnly());
        ServerBootstrap b = new ServerBootstrap()
                .group(group)
                .channel(transports.serverSocketChannel())
                .option(ChannelOption.SO_BACKLOG, 4096)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 * 1024, 512 * 1024))
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new Session(chunk));
                    }
                });
        List<Integer> bound = new ArrayList<>();
        for (int i = 0; i < ports; i++) {
            Channel ch = b.bind("127.0.0.1", 0).sync().channel();
            bound.add(((InetSocketAddress) ch.localAddress()).getPort());
        }
        StringBuilder line = new StringBuilder("{\"event\":\"ready\",\"ports\":[");
        for (int i = 0; i < bound.size(); i++) {
            line.append(i == 0 ? "" : ",").append(bound.get(i));
        }
        line.append("],\"transport\":\"").append(transports.name()).append("\"}");
        System.out.println(line);
        System.out.flush();
        CountDownLatch forever = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(forever::countDown));
        forever.await();
        group.shutdownGracefully();
    }

    /** One connection: hello, command, then echo / source / sink. Everything runs on the channel's event loop. */
    private static final class Session extends ChannelInboundHandlerAdapter {
        private final ByteBuf chunk;
        private final ByteBuf command = Unpooled.buffer(COMMAND_BYTES);
        private byte op;
        private long remaining; // SOURCE: bytes still to send (-1: unlimited); SINK: bytes still to receive
        private long received;
        private boolean finished; // SOURCE: all sent and half-closed; SINK: count answered

        Session(ByteBuf chunk) {
            this.chunk = chunk;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ctx.writeAndFlush(Unpooled.wrappedBuffer(new byte[]{HELLO}));
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf in = (ByteBuf) msg;
            if (op == 0) {
                command.writeBytes(in, Math.min(in.readableBytes(), command.writableBytes()));
                if (command.isWritable()) {
                    in.release();
                    return;
                }
                op = command.readByte();
                remaining = command.readLong();
                if (op == SOURCE_SMALL_BUFFER) {
                    ctx.channel().config().setOption(ChannelOption.SO_SNDBUF, MANY_STREAM_BUFFER);
                    op = SOURCE;
                }
                switch (op) {
                    case SOURCE -> pump(ctx);
                    case ECHO, SINK -> { }
                    default -> {
                        in.release();
                        ctx.close();
                        return;
                    }
                }
            }
            switch (op) {
                case ECHO -> {
                    if (in.isReadable()) {
                        ctx.write(in);
                    } else {
                        in.release();
                    }
                }
                case SINK -> {
                    received += in.readableBytes();
                    in.release();
                    if (!finished && remaining >= 0 && received >= remaining) {
                        finished = true;
                        ctx.writeAndFlush(Unpooled.buffer(8).writeLong(received));
                    }
                }
                case SOURCE -> {
                    // Any byte from the client during a download means "stop": end the stream with a FIN after
                    // what is queued, so the client can drain and close without resetting a busy stream.
                    boolean stop = in.isReadable();
                    in.release();
                    if (stop && !finished) {
                        finished = true;
                        ctx.writeAndFlush(Unpooled.EMPTY_BUFFER)
                                .addListener(f -> ((DuplexChannel) ctx.channel()).shutdownOutput());
                    }
                }
                default -> ReferenceCountUtil.release(in);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (op == ECHO) {
                ctx.flush();
                if (!ctx.channel().isWritable()) {
                    ctx.channel().config().setAutoRead(false); // echo backpressure: resume when drained
                }
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                if (op == SOURCE) {
                    pump(ctx);
                } else if (op == ECHO) {
                    ctx.channel().config().setAutoRead(true);
                }
            }
        }

        private void pump(ChannelHandlerContext ctx) {
            Channel ch = ctx.channel();
            boolean wrote = false;
            while (!finished && ch.isActive() && ch.isWritable() && remaining != 0) {
                int n = remaining < 0 ? CHUNK : (int) Math.min(CHUNK, remaining);
                if (remaining > 0) {
                    remaining -= n;
                }
                if (remaining == 0) {
                    // Half-close once the last byte is written: shutdownOutput would fail writes still queued.
                    finished = true;
                    ctx.write(chunk.retainedSlice(0, n)).addListener(f -> ((DuplexChannel) ch).shutdownOutput());
                } else {
                    ctx.write(chunk.retainedSlice(0, n), ctx.voidPromise());
                }
                wrote = true;
            }
            if (wrote) {
                ctx.flush();
            }
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                if (op == SINK && !finished) {
                    finished = true;
                    ctx.writeAndFlush(Unpooled.buffer(8).writeLong(received)).addListener(f -> ctx.close());
                    return;
                }
                ctx.close(); // the client finished: nothing more to do on this connection
            }
            ReferenceCountUtil.release(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close(); // resets from clients that close early are normal here
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            command.release();
        }
    }
}
