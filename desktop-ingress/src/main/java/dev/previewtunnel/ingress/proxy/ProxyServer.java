package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.BrowserConnectionLimits;
import dev.previewtunnel.local.net.ConnectionBudget;
import dev.previewtunnel.mux.relay.ByteActivity;
import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.relay.SocketHalfCloseHandler;
import dev.previewtunnel.mux.relay.Transports;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.concurrent.GlobalEventExecutor;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The browser-facing listener. Browser sockets start with auto-read off (the proxy reads on demand) and allow
 * half-closure (a browser's FIN on a CONNECT tunnel becomes END_STREAM, not an abort).
 *
 * <p>Connections are counted by a {@link ConnectionBudget}: unauthenticated ones (no request with a valid session
 * credential yet) have a lower cap and a short deadline, so a local process opening thousands of idle sockets
 * cannot starve authenticated sessions or the process's descriptors; request bodies have an idle deadline
 * ({@link RequestBodyDeadline}).
 */
public final class ProxyServer implements AutoCloseable {
    private final Channel channel;
    /** Browser connections in all, and those without a valid credential yet ({@link ConnectionBudget#trust}). */
    private final ConnectionBudget budget;
    /** Accepted browser connections (each leaves the group when it closes): a drain waits for their writes. */
    private final ChannelGroup browsers = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);

    public ProxyServer(EventLoopGroup group, Transports transports, IngressContext context)
            throws InterruptedException {
        BrowserConnectionLimits limits = context.config().browserLimits();
        int total = ConnectionBudget.clipToFdLimit("max-browser-connections", limits.maxConnections(),
                ConnectionBudget.fdLimit());
        this.budget = new ConnectionBudget("ingress proxy", total, Math.min(total, limits.maxUnauthenticated()),
                limits.unauthenticatedTimeout());
        int high = context.config().mux().streamWriteHighWaterMark();
        int low = context.config().mux().streamWriteLowWaterMark();
        this.channel = new ServerBootstrap()
                .group(group)
                .channel(transports.serverSocketChannel())
                .handler(budget.acceptOrder()) // "oldest" is accept order, whichever loop admits first
                .childOption(ChannelOption.AUTO_READ, false)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(low, high))
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (!budget.admit(ch)) {
                            return; // over budget: closed at accept, nothing read
                        }
                        browsers.add(ch);
                        ReadBuffers.relayReads(ch); // before its first read: Netty keeps the first read handle
                        installBrowserPipeline(ch, context);
                    }
                })
                .bind(context.config().listen())
                .sync()
                .channel();
    }

    /**
     * The browser-side pipeline of one accepted connection, in order: byte activity (a drain's measure), body-deadline byte clock, half-close, the
     * strict HTTP/1.1 codec, body-deadline message clock, the proxy handler. The fuzz tests install exactly this.
     */
    static void installBrowserPipeline(Channel ch, IngressContext context) {
        RequestBodyDeadline body = new RequestBodyDeadline(context.config().browserLimits().bodyIdleTimeout());
        ch.pipeline().addLast(ByteActivity.NAME, new ByteActivity()); // a drain's measure
        ch.pipeline().addLast(RequestBodyDeadline.BYTES, body.bytes());
        ch.pipeline().addLast("half-close", SocketHalfCloseHandler.INSTANCE);
        ch.pipeline().addLast(BrowserPipeline.HTTP_CODEC,
                RequestFraming.browserCodec(context.config().maxRequestHead()));
        ch.pipeline().addLast(RequestBodyDeadline.MESSAGES, body.messages());
        ch.pipeline().addLast(BrowserPipeline.PROXY, new ProxyConnectionHandler(context));
    }

    /** The connection budget of this listener (open, unauthenticated, refused counts). */
    public ConnectionBudget budget() {
        return budget;
    }

    /** The browser connections open now (a copy). */
    public List<Channel> browsers() {
        return List.copyOf(browsers);
    }

    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    /**
     * For a drain, after the tunnel connections have closed: waits until what is queued to each browser connection
     * has been written to its socket (a response's tail can still sit in the outbound buffer when its stream ends),
     * or until {@code timeout}. Returns true if everything was written in time.
     */
    public boolean awaitWritten(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<ChannelFuture> written = new ArrayList<>();
        for (Channel browser : browsers) {
            // An empty write at the head completes once every write queued before it has gone to the socket.
            io.netty.channel.ChannelHandlerContext head = browser.pipeline().firstContext();
            if (head != null) { // null once the channel has closed and its handlers are gone
                written.add(head.writeAndFlush(Unpooled.EMPTY_BUFFER));
            }
        }
        boolean all = true;
        for (ChannelFuture w : written) {
            long left = deadline - System.nanoTime();
            all &= left > 0 && w.awaitUninterruptibly(left, TimeUnit.NANOSECONDS);
        }
        return all;
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
    }

    /**
     * Closes every browser connection still open and waits (bounded) until they are closed. Called at the end of a
     * stop, before the event loops shut down: Netty 4.2's loop shutdown with no quiet period does not always close
     * the channels still registered, which would leave those sockets open with nobody reading them.
     */
    public void closeBrowsers(Duration timeout) {
        browsers.forEach(b -> b.attr(dev.previewtunnel.ingress.session.BrowserSession.CLOSE_REASON)
                .setIfAbsent(dev.previewtunnel.ingress.session.BrowserSession.SHUTDOWN));
        browsers.close().awaitUninterruptibly(timeout.toMillis());
    }
}
