package dev.previewtunnel.mux.relay;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;

/** Counts the read() calls that pass it on their way to the transport (a handler test's view of read-on-demand). */
final class ReadCounter extends ChannelOutboundHandlerAdapter {
    int count;

    @Override
    public void read(ChannelHandlerContext ctx) {
        count++;
        ctx.read();
    }
}
