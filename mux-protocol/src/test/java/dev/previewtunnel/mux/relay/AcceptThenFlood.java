package dev.previewtunnel.mux.relay;

import dev.previewtunnel.mux.wire.ConnectHeaders;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;

import java.util.function.Supplier;

/**
 * A hostile gateway's stream handler for a frame-level test server (docs/security.md, hostile peers, item 11):
 * accepts the stream the ingress opens; on the first DATA frame the ingress sends (its request, or a signal that it
 * has done what the test waits for) sends {@code answer}, if any, then starts {@code flood}; the code of a
 * RST_STREAM it receives completes {@link WindowPacedFlood#reset}. For a test's one stream.
 */
@ChannelHandler.Sharable
public final class AcceptThenFlood extends ChannelInboundHandlerAdapter {
    private final WindowPacedFlood flood;
    private final Supplier<ByteBuf> answer;
    private boolean started;

    /** @param answer the DATA sent before the flood (a fresh buffer), or null for none */
    public AcceptThenFlood(WindowPacedFlood flood, Supplier<ByteBuf> answer) {
        this.flood = flood;
        this.answer = answer;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof Http2HeadersFrame) {
            ctx.writeAndFlush(ConnectHeaders.accepted());
        } else if (msg instanceof Http2DataFrame && !started) {
            started = true;
            if (answer != null) {
                ctx.writeAndFlush(new DefaultHttp2DataFrame(answer.get()));
            }
            flood.start((Http2StreamChannel) ctx.channel());
        }
        ReferenceCountUtil.release(msg);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof Http2ResetFrame rst) {
            flood.reset.complete(rst.errorCode());
        }
        ReferenceCountUtil.release(evt);
    }
}
