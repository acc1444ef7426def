package dev.previewtunnel.mux.client;

import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;

/**
 * A client of another build: it offers another protocol version than this build's ({@code ptun.v2}, say), for
 * tests of how a gateway and a client of different builds fail. Production code never offers anything else.
 */
public final class OtherVersionClient {
    private OtherVersionClient() {
    }

    public static TunnelClient offering(String otherSubprotocol, EventLoopGroup group,
                                        Class<? extends SocketChannel> channelType, MuxSettings settings) {
        return new TunnelClient(group, channelType, settings, otherSubprotocol);
    }
}
