package dev.previewtunnel.mux.server;

import dev.previewtunnel.mux.relay.OutputShutdown;
import dev.previewtunnel.mux.relay.StreamByteAdapter;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.ConnectRequest;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.util.ReferenceCountUtil;

import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A minimal tunnel server for protocol tests: accepts streams whose grant equals "good" and echoes their bytes
 * (END_STREAM echoed as END_STREAM) through a relay to an in-memory loop; refuses others with grant_refused.
 */
public final class MuxTestServer implements AutoCloseable {
    final Channel server;
    final AtomicInteger acceptedStreams = new AtomicInteger();

    public MuxTestServer(EventLoopGroup group, Transports transports, MuxSettings settings,
                  ChannelHandler streamHandlerOverride) throws InterruptedException {
        server = new ServerBootstrap().group(group).channel(transports.serverSocketChannel())
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(8192),
                                new TunnelServerUpgradeHandler(MuxProtocol.DEFAULT_PATH, settings, token -> {
                                    if (!"secret-token".equals(token)) {
                                        throw new TunnelServerUpgradeHandler.RefusedException("token_refused",
                                                "connection token refused");
                                    }
                                    return "env-a";
                                }, new TunnelServerUpgradeHandler.Acceptor() {
                                    @Override
                                    public ChannelHandler inboundStreamHandler(Channel parent, Object principal) {
                                        return streamHandlerOverride != null ? streamHandlerOverride
                                                : new EchoAcceptor();
                                    }

                                    @Override
                                    public ChannelHandler connectionHandler(Channel parent, Object principal) {
                                        return null;
                                    }
                                }));
                    }
                }).bind("127.0.0.1", 0).sync().channel();
    }

    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /** Echo: answers 200, then writes every DATA payload back; END_STREAM back after the input ended. */
    @ChannelHandler.Sharable
    final class EchoAcceptor extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            if (msg instanceof Http2HeadersFrame headers) {
                try {
                    ConnectRequest request = ConnectRequest.parse(headers.headers());
                    if (!"good".equals(request.grant())) {
                        ctx.writeAndFlush(ConnectHeaders.refused(TunnelError.GRANT_REFUSED, "grant_bad_signature"));
                        return;
                    }
                } catch (TunnelStreamException e) {
                    ctx.writeAndFlush(ConnectHeaders.refused(e.error(), e.detail()));
                    return;
                }
                acceptedStreams.incrementAndGet();
                ctx.writeAndFlush(ConnectHeaders.accepted());
                ctx.pipeline().addLast(new StreamByteAdapter(), new EchoBytes());
                ctx.pipeline().remove(this);
                return;
            }
            ReferenceCountUtil.release(msg);
        }
    }

    /** Writes bytes back; echoes the half-close once all input was echoed. */
    static final class EchoBytes extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.write(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof io.netty.channel.socket.ChannelInputShutdownEvent) {
                ctx.writeAndFlush(OutputShutdown.INSTANCE);
            }
        }
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
    }
}
