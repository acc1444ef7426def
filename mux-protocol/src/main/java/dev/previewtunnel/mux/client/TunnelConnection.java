package dev.previewtunnel.mux.client;

import dev.previewtunnel.mux.codec.MuxPipeline;
import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.relay.RelayHandler;
import dev.previewtunnel.mux.relay.StreamByteAdapter;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.handler.codec.http2.Http2GoAwayFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamChannelBootstrap;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The opening side of one established tunnel connection (the desktop's end). Opens CONNECT streams, tracks how
 * many are live (for least-loaded placement) and whether the gateway asked it to drain with GOAWAY.
 */
public final class TunnelConnection {
    private final Channel parent;
    private final MuxSettings settings;
    private final AtomicInteger liveStreams = new AtomicInteger();
    /** Streams opened here and still open (touched on the connection's event loop only). */
    private final Set<Http2StreamChannel> streams = new HashSet<>();
    private volatile boolean draining;
    private volatile Runnable drainListener = () -> { };

    TunnelConnection(Channel parent, MuxSettings settings) {
        this.parent = parent;
        this.settings = settings;
    }

    /** The last handler of the parent pipeline: watches GOAWAY. Install via {@link MuxPipeline#install}. */
    ChannelInboundHandlerAdapter connectionHandler() {
        return new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (msg instanceof Http2GoAwayFrame && !draining) {
                    draining = true;
                    for (Http2StreamChannel stream : List.copyOf(streams)) {
                        stream.pipeline().fireUserEventTriggered(TunnelDraining.INSTANCE);
                    }
                    drainListener.run();
                }
                ReferenceCountUtil.release(msg);
            }
        };
    }

    public Channel channel() {
        return parent;
    }

    /** True while the connection is open and the gateway has not asked it to drain. */
    public boolean isUsable() {
        return parent.isActive() && !draining;
    }

    public boolean isDraining() {
        return draining;
    }

    /** Runs {@code listener} (on the connection's event loop) when the gateway sends GOAWAY. */
    public void onDrain(Runnable listener) {
        this.drainListener = listener;
        if (draining) {
            parent.eventLoop().execute(listener);
        }
    }

    public int liveStreams() {
        return liveStreams.get();
    }

    /** The event loop the connection and all its streams run on. */
    public EventLoop eventLoop() {
        return parent.eventLoop();
    }

    /**
     * Opens a tunnel stream to {@code target} carrying {@code grant}. The returned future completes with the
     * stream channel once the gateway has dialed the target (auto-read off, a {@link StreamByteAdapter} installed,
     * ready for {@link RelayHandler#link}), or fails with a {@link TunnelStreamException}.
     */
    public Future<Http2StreamChannel> openStream(Authority target, String grant, Duration timeout) {
        Promise<Http2StreamChannel> promise = parent.eventLoop().newPromise();
        if (!isUsable()) {
            promise.setFailure(new TunnelStreamException(TunnelError.GATEWAY_UNREACHABLE,
                    draining ? "tunnel connection is draining" : "tunnel connection is closed", true));
            return promise;
        }
        new Http2StreamChannelBootstrap(parent)
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(
                        settings.streamWriteLowWaterMark(), settings.streamWriteHighWaterMark()))
                .handler(new ChannelInitializer<Http2StreamChannel>() {
                    @Override
                    protected void initChannel(Http2StreamChannel ch) {
                        ReadBuffers.relayReads(ch);
                        ch.pipeline().addLast(new StreamOpenHandler(promise, timeout), new StreamByteAdapter());
                    }
                })
                .open()
                .addListener(f -> {
                    if (!f.isSuccess()) {
                        promise.tryFailure(new TunnelStreamException(TunnelError.TOO_MANY_STREAMS,
                                "could not open a stream: " + f.cause().getClass().getSimpleName(), true));
                        return;
                    }
                    Http2StreamChannel stream = (Http2StreamChannel) f.getNow();
                    liveStreams.incrementAndGet();
                    streams.add(stream);
                    stream.closeFuture().addListener(c -> {
                        liveStreams.decrementAndGet();
                        streams.remove(stream);
                    });
                    stream.writeAndFlush(ConnectHeaders.connect(target, grant)).addListener(w -> {
                        if (!w.isSuccess()) {
                            promise.tryFailure(new TunnelStreamException(TunnelError.STREAM_RESET,
                                    "could not send CONNECT: " + w.cause().getClass().getSimpleName()));
                            stream.close();
                        }
                    });
                    stream.read(); // the answer
                });
        return promise;
    }

    /** Starts a graceful close: GOAWAY, then close once live streams end (bounded by the keepalive timeout). */
    public void close() {
        parent.close();
    }

    /** Starts a drain: GOAWAY, then close once live streams end, after {@code grace} at the latest. */
    public void close(Duration grace) {
        MuxPipeline.closeGracefully(parent, grace);
    }
}
