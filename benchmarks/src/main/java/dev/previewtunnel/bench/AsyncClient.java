package dev.previewtunnel.bench;

import dev.previewtunnel.mux.relay.Transports;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Many streams at once from the runner (figures 4 and 5): a Netty client on its own small event-loop group. Each
 * {@link Stream} connects, does the CONNECT exchange when the route is a proxy, waits for the target's hello byte,
 * and then counts every byte it reads.
 */
final class AsyncClient implements AutoCloseable {
    private final EventLoopGroup group;
    private final Class<? extends SocketChannel> channelClass;

    private final int receiveBuffer;

    /** A client whose sockets have the many-stream receive buffer ({@link BenchTarget#MANY_STREAM_BUFFER}). */
    AsyncClient(int threads) {
        this(threads, BenchTarget.MANY_STREAM_BUFFER);
    }

    /** {@code receiveBuffer} 0: the kernel's default and autotuning, as a browser has. */
    AsyncClient(int threads, int receiveBuffer) {
        this.receiveBuffer = receiveBuffer;
        Transports transports = Transports.best(); // the programs' transport (finding 56)
        channelClass = transports.socketChannel();
        group = transports.newGroup(threads, "bench-client");
    }

    /** Opens {@code count} streams (target port i % ports), at most {@code inFlight} opens at a time. */
    List<Stream> openAll(Route route, int count, int inFlight, long timeoutMillis) throws IOException {
        Semaphore permits = new Semaphore(inFlight);
        List<Stream> streams = new ArrayList<>(count);
        List<CompletableFuture<Stream>> opening = new ArrayList<>(count);
        try {
            for (int i = 0; i < count; i++) {
                if (!permits.tryAcquire(timeoutMillis, TimeUnit.MILLISECONDS)) {
                    throw new IOException("opening streams stalled at " + i + " of " + count);
                }
                Stream s = open(route, i);
                streams.add(s);
                opening.add(s.ready);
                s.ready.whenComplete((r, e) -> permits.release());
            }
            CompletableFuture.allOf(opening.toArray(CompletableFuture[]::new)).get(timeoutMillis,
                    TimeUnit.MILLISECONDS);
            return streams;
        } catch (Exception e) {
            streams.forEach(Stream::close);
            long failed = opening.stream().filter(CompletableFuture::isCompletedExceptionally).count();
            String first = opening.stream().filter(CompletableFuture::isCompletedExceptionally).findFirst()
                    .map(f -> {
                        try {
                            f.join();
                            return "";
                        } catch (RuntimeException x) {
                            return String.valueOf(x.getCause());
                        }
                    }).orElse(String.valueOf(e));
            throw new IOException("opening " + count + " streams over " + route.label + " failed (" + failed
                    + " failed; first: " + first + ")", e);
        }
    }

    Stream open(Route route, int port) {
        Stream s = new Stream(route.connectRequest(port));
        Bootstrap b = new Bootstrap()
                .group(group)
                .channel(channelClass)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(s);
                    }
                });
        if (receiveBuffer > 0) {
            b.option(ChannelOption.SO_RCVBUF, receiveBuffer);
        }
        ChannelFuture f = b.connect(route.address(port));
        s.channel = f.channel();
        f.addListener(done -> {
            if (!done.isSuccess()) {
                s.ready.completeExceptionally(done.cause());
            }
        });
        return s;
    }

    @Override
    public void close() {
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /** One stream. Counters are written on its event loop and read by the runner. */
    static final class Stream extends ChannelInboundHandlerAdapter {
        final CompletableFuture<Stream> ready = new CompletableFuture<>();
        private final byte[] connectHead;
        private ByteBuf head; // proxy answer so far
        private boolean helloSeen;
        volatile Channel channel;
        volatile long received;
        volatile boolean ended;

        Stream(byte[] connectHead) {
            this.connectHead = connectHead;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            if (connectHead != null) {
                head = ctx.alloc().heapBuffer(1024);
                ctx.writeAndFlush(Unpooled.wrappedBuffer(connectHead));
            }
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf in = (ByteBuf) msg;
            try {
                if (head != null) {
                    head.writeBytes(in);
                    int end = indexOfHeadEnd(head);
                    if (end < 0) {
                        if (head.readableBytes() > 8192) {
                            fail(ctx, "proxy answer head too long");
                        }
                        return;
                    }
                    String status = head.toString(0, Math.min(end, 64), StandardCharsets.US_ASCII);
                    if (!status.startsWith("HTTP/1.1 200")) {
                        fail(ctx, "CONNECT refused: " + head.toString(0, Math.min(end, 400),
                                StandardCharsets.US_ASCII).replace("\r\n", " | "));
                        return;
                    }
                    head.readerIndex(end);
                    ByteBuf rest = head;
                    head = null;
                    try {
                        consume(ctx, rest);
                    } finally {
                        rest.release();
                    }
                    return;
                }
                consume(ctx, in);
            } finally {
                in.release();
            }
        }

        private void consume(ChannelHandlerContext ctx, ByteBuf in) {
            if (!helloSeen && in.isReadable()) {
                if (in.readByte() != BenchTarget.HELLO) {
                    fail(ctx, "unexpected first byte from the target");
                    return;
                }
                helloSeen = true;
                ready.complete(this);
            }
            int n = in.readableBytes();
            if (n > 0) {
                received += n; // single writer (this event loop)
            }
        }

        private void fail(ChannelHandlerContext ctx, String why) {
            ready.completeExceptionally(new IOException(why));
            ctx.close();
        }

        private static int indexOfHeadEnd(ByteBuf b) {
            for (int i = b.readerIndex() + 3; i < b.writerIndex(); i++) {
                if (b.getByte(i) == '\n' && b.getByte(i - 1) == '\r' && b.getByte(i - 2) == '\n'
                        && b.getByte(i - 3) == '\r') {
                    return i + 1;
                }
            }
            return -1;
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            ended = true;
            if (head != null) {
                head.release();
                head = null;
            }
            ready.completeExceptionally(new IOException("closed before the target's hello"));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ready.completeExceptionally(cause);
            ctx.close();
        }

        /** Sends a command; with {@code stall}, stops reading right after (a reader that has gone away). */
        void command(byte op, long arg, boolean stall) {
            Channel ch = channel;
            ch.eventLoop().execute(() -> {
                if (stall) {
                    ch.config().setAutoRead(false);
                }
                ch.writeAndFlush(Unpooled.buffer(BenchTarget.COMMAND_BYTES).writeByte(op).writeLong(arg));
            });
        }

        ChannelFuture close() {
            Channel ch = channel;
            return ch == null ? null : ch.close();
        }

        /**
         * Ends a downloading stream the way a finished response ends: asks the target to stop (one byte), reads
         * what is still on its way, and closes at the target's FIN. Returns the close future.
         */
        ChannelFuture finish() {
            Channel ch = channel;
            if (ch == null) {
                return null;
            }
            ch.eventLoop().execute(() -> {
                if (ch.isActive()) {
                    ch.config().setAutoRead(true);
                    ch.read();
                    ch.writeAndFlush(Unpooled.wrappedBuffer(new byte[]{'X'}));
                }
            });
            return ch.closeFuture();
        }
    }

    /**
     * Ends every stream and waits for them. Through the tunnel gracefully ({@link Stream#finish}): closing a busy
     * stream abruptly makes the ingress reset it while up to a window of DATA is still in flight, which can cost the
     * tunnel connection (see {@link AbortProbe}). Elsewhere abruptly: draining 1,000 ssh channels' buffers
     * would take minutes and measures nothing.
     */
    static void closeAll(List<Stream> streams, boolean graceful) {
        if (!graceful) {
            abortAll(streams);
            return;
        }
        List<ChannelFuture> closing = new ArrayList<>();
        for (Stream s : streams) {
            ChannelFuture f = s.finish();
            if (f != null) {
                closing.add(f);
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (ChannelFuture f : closing) {
            long left = Math.max(1, deadline - System.nanoTime());
            if (!f.awaitUninterruptibly(left, TimeUnit.NANOSECONDS)) {
                f.channel().close().awaitUninterruptibly(2, TimeUnit.SECONDS);
            }
        }
    }

    /** Closes every stream at once, busy or not (what a browser does to a page's connections on navigation). */
    static void abortAll(List<Stream> streams) {
        List<ChannelFuture> closing = new ArrayList<>();
        for (Stream s : streams) {
            ChannelFuture f = s.close();
            if (f != null) {
                closing.add(f);
            }
        }
        for (ChannelFuture f : closing) {
            f.awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }
}
