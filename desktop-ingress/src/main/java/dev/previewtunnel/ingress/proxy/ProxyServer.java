package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.ReadBuffers;
import dev.previewtunnel.mux.SocketHalfCloseHandler;
import dev.previewtunnel.mux.Transports;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpServerCodec;

import java.net.InetSocketAddress;

/**
 * The browser-facing listener. Browser sockets start with auto-read off (the proxy reads on demand) and allow
 * half-closure (a browser's FIN on a CONNECT tunnel becomes END_STREAM, not an abort).
 */
public final class ProxyServer implements AutoCloseable {
    private final Channel channel;

    public ProxyServer(EventLoopGroup group, Transports transports, IngressContext context)
            throws InterruptedException {
        int high = context.config().mux().streamWriteHighWaterMark();
        int low = context.config().mux().streamWriteLowWaterMark();
        this.channel = new ServerBootstrap()
                .group(group)
                .channel(transports.serverSocketChannel())
                .childOption(ChannelOption.AUTO_READ, false)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(low, high))
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ReadBuffers.relayReads(ch); // before its first read: Netty keeps the first read handle
                        HttpDecoderConfig decoder = new HttpDecoderConfig()
                                .setMaxInitialLineLength(8192)
                                .setMaxHeaderSize(context.config().maxRequestHead())
                                .setMaxChunkSize(64 * 1024);
                        ch.pipeline().addLast("half-close", SocketHalfCloseHandler.INSTANCE);
                        ch.pipeline().addLast(ProxyConnectionHandler.HTTP_CODEC, new HttpServerCodec(decoder));
                        ch.pipeline().addLast(ProxyConnectionHandler.NAME, new ProxyConnectionHandler(context));
                    }
                })
                .bind(context.config().listen())
                .sync()
                .channel();
    }

    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
    }
}
