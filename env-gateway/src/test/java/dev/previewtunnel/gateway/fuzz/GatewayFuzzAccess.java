package dev.previewtunnel.gateway;

import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.RevocationList;
import dev.previewtunnel.local.audit.AuditLog;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.ReferenceCountUtil;

/**
 * Test-only bridge (test sources, package {@code dev.previewtunnel.gateway}, kept next to the fuzz test that uses
 * it) to the gateway's package-private per-connection handlers, so the fuzz test can build exactly the pipeline
 * {@code GatewayServer} builds after an upgrade without widening any production type.
 */
public final class GatewayFuzzAccess {
    private final GatewayContext context;
    private final GatewayMetrics metrics;

    /**
     * A gateway context as {@code GatewayServer} assembles it. Target dials use NIO sockets; on an
     * {@code EmbeddedChannel} they cannot register (the stream is answered {@code target_unreachable}), which proves
     * that every check before the dial passed. {@code blocking} runs name resolution (inline is fine in tests).
     */
    public GatewayFuzzAccess(GatewayConfig config, GrantVerifier verifier, RevocationList revocations,
                             java.util.concurrent.Executor blocking) {
        LiveStreams live = new LiveStreams();
        this.metrics = new GatewayMetrics(new SimpleMeterRegistry(), live);
        TargetDialer dialer = new TargetDialer(NioSocketChannel.class, config.dialTimeout(), new WriteBufferWaterMark(
                config.mux().streamWriteLowWaterMark(), config.mux().streamWriteHighWaterMark()));
        this.context = new GatewayContext(config, verifier, revocations, dialer, live,
                new SessionLimiter(config.limits()), metrics, new AuditLog("gateway"), blocking);
    }

    /** The inbound-stream handler of one connection, as {@code GatewayServer.Acceptor#inboundStreamHandler}. */
    public ChannelHandler streamHandler(String connectionId) {
        return StreamAuthorizer.initializer(context, ConnectionState.of(connectionId, context.config(), "", null));
    }

    /** The last handler of the parent pipeline, as {@code GatewayServer.Acceptor#connectionHandler}. */
    public ChannelHandler connectionHandler() {
        return new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ReferenceCountUtil.release(msg);
            }
        };
    }

    public long dialAttempts() {
        return metrics.dialAttempts();
    }

    public int liveStreams() {
        return context.liveStreams().size();
    }
}
