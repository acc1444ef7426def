package dev.previewtunnel.mux.codec;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http2.Http2UnknownFrame;

/**
 * Drops the HTTP/2 frames of types the tunnel does not use (extension frames), which RFC 9113 section 4.1 says a
 * receiver must ignore, before they reach a stream.
 *
 * <p>Why here: Netty's frame codec ignores them on stream 0 only; on an open stream it passes each one to the stream
 * channel, which queues it with the stream's DATA while the stream is not reading. Such frames are not flow
 * controlled, so a peer sending them on a stream whose reader has stalled made the receiver keep every one of them
 * (and the decoder buffers they are slices of) for as long as the stall lasted: memory without a bound
 * (docs/security.md, hostile peers, item 11; {@code UnknownFrameFloodTest}).
 */
final class UnknownFrames extends ChannelInboundHandlerAdapter {

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (msg instanceof Http2UnknownFrame unknown) {
            unknown.release();
            return;
        }
        super.channelRead(ctx, msg);
    }
}
