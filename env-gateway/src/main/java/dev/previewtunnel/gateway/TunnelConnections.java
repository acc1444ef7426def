package dev.previewtunnel.gateway;

import io.netty.channel.Channel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.ChannelGroupFuture;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.GlobalEventExecutor;

import java.util.List;

/**
 * The tunnel connections open right now (upgraded: their token verified), each with the jti of the token it was
 * opened with, so that revoking a token ends its connections and not only its future upgrades. A connection
 * leaves the registry when it closes.
 */
public final class TunnelConnections {
    private static final AttributeKey<String> TOKEN_ID = AttributeKey.valueOf("ptun.gateway.tokenId");

    private final ChannelGroup open = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);

    void add(Channel connection, String tokenId) {
        connection.attr(TOKEN_ID).set(tokenId);
        open.add(connection);
    }

    /** Closes every connection opened with the token {@code jti}; returns how many. */
    public int closeToken(String jti) {
        int closed = 0;
        for (Channel c : open) {
            if (jti.equals(c.attr(TOKEN_ID).get())) {
                c.close();
                closed++;
            }
        }
        return closed;
    }

    /** Every open tunnel connection right now (a copy). */
    public List<Channel> all() {
        return List.copyOf(open);
    }

    public int size() {
        return open.size();
    }

    ChannelGroupFuture closeAll() {
        return open.close();
    }
}
