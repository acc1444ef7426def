package dev.previewtunnel.gateway;

import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;

import java.util.concurrent.TimeUnit;

/**
 * A gateway that dies as a crashed process would, for tests of failure handling: the listener goes first (no
 * reconnection can land), then every tunnel connection is reset (RST, no GOAWAY written), then what is left is
 * released. Only public operations are used: a test cannot crash a gateway in a way production code never sees.
 */
public final class GatewayCrash {
    private GatewayCrash() {
    }

    /** Drops the listener and every tunnel connection at once, without GOAWAY; the gateway is closed after. */
    public static void crash(GatewayServer gateway) {
        gateway.stopAccepting();
        for (Channel c : gateway.connections().all()) {
            // Close from the head of the pipeline: the socket goes (RST, no GOAWAY written), while every handler
            // still sees channelInactive and frees what it holds.
            c.eventLoop().execute(() -> {
                c.config().setOption(ChannelOption.SO_LINGER, 0);
                c.pipeline().firstContext().close();
            });
            c.closeFuture().awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        gateway.close(); // nothing left to drain: releases the event loops
    }
}
