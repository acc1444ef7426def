package dev.previewtunnel.gateway;

import dev.previewtunnel.gateway.policy.PolicyException;
import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.grants.GrantException;
import dev.previewtunnel.grants.GrantFailure;
import dev.previewtunnel.grants.VerifiedGrant;
import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.relay.RelayHandler;
import dev.previewtunnel.mux.relay.StalledStreams;
import dev.previewtunnel.mux.relay.StreamByteAdapter;
import dev.previewtunnel.mux.wire.ConnectHeaders;
import dev.previewtunnel.mux.wire.ConnectRequest;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;

import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * The handler that authorises every inbound stream on its own, right behind its meter, then dials.
 *
 * <p>Order, each step refusing with its own code before anything is dialed: CONNECT shape
 * ({@link ConnectRequest}), grant (signature, audience, expiry, environment = this gateway's, target = the
 * stream's {@code :authority} exactly, not revoked), target policy on the resolved addresses. Only then the
 * TCP connect; the stream is answered 200 once the target accepted, and the relay starts. The stream's bytes
 * wait unread (auto-read off) until then, bounded by the stream window.
 */
final class StreamAuthorizer extends ChannelInboundHandlerAdapter {
    /** The byte adapter's name in a stream's pipeline: the idle closer goes in front of it. */
    private static final String BYTES = "bytes";
    private final GatewayContext gateway;
    private final ConnectionState connection;
    private final String connectionId;
    private boolean started;

    private StreamAuthorizer(GatewayContext gateway, ConnectionState connection) {
        this.gateway = gateway;
        this.connection = connection;
        this.connectionId = connection.id;
    }

    /**
     * The pipeline of every inbound stream of one tunnel connection, in order: its meter ({@link StreamMeter}), this
     * authoriser (until the stream is answered), the byte adapter the relay reads through. Built whole here, so
     * that an answered stream adds only its idle closer and the relay: the adapter sees nothing while this handler is
     * in front of it, which consumes or refuses everything before the answer.
     */
    static ChannelInitializer<Http2StreamChannel> initializer(GatewayContext gateway, ConnectionState connection) {
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(Http2StreamChannel ch) {
                ReadBuffers.relayReads(ch); // relayed to its target once granted
                connection.writeShares.add(ch); // its write high-water mark: a share of the connection's budget
                ch.pipeline().addLast(new StreamMeter(gateway.metrics()), new StreamAuthorizer(gateway, connection));
                ch.pipeline().addLast(BYTES, new StreamByteAdapter());
            }
        };
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (started || !(msg instanceof Http2HeadersFrame headers)) {
            ReferenceCountUtil.release(msg);
            if (!started) {
                ctx.close(); // DATA before HEADERS: Netty resets the stream
            }
            return;
        }
        started = true;
        ctx.channel().config().setOption(ChannelOption.AUTO_READ, false);
        Http2StreamChannel stream = (Http2StreamChannel) ctx.channel();
        // Unread until its relay is linked (the grant check and the dial, up to the dial timeout): what the peer sends
        // meanwhile waits in the stream's queue, so it counts and is copied as a stalled stream's (StalledStreams).
        StalledStreams.mark(stream, true);
        ConnectRequest request;
        VerifiedGrant grant;
        try {
            request = ConnectRequest.parse(headers.headers());
        } catch (TunnelStreamException e) {
            refuse(stream, null, null, e.error(), e.detail());
            return;
        }
        TokenLimiter.Token token = connection.token;
        if (token != null && !token.reserveGrantVerification()) {
            // The token spent its failure budget: refused unverified, so a flood of bad grants costs no signature
            // checks while it cools down.
            refuse(stream, request, null, TunnelError.TOO_MANY_STREAMS, "grant_failure_cooldown");
            return;
        }
        try {
            grant = gateway.verifier().verifyGrant(request.grant(), gateway.config().environment(),
                    request.authority().toString());
            gateway.metrics().grantVerified(true);
            if (token != null) {
                token.grantVerified(true);
            }
        } catch (GrantException e) {
            gateway.metrics().grantVerified(false);
            if (token != null) {
                token.grantVerified(!spendsFailureBudget(e.failure()));
            }
            refuse(stream, request, null, grantError(e.failure()), e.failure().code());
            return;
        }
        String limited = gateway.limiter().tryOpen(grant.session());
        if (limited != null) {
            refuse(stream, request, grant, TunnelError.TOO_MANY_STREAMS, limited);
            return;
        }
        // From here on the stream counts against its session until it closes, whatever happens next.
        stream.closeFuture().addListener(f -> gateway.limiter().closed(grant.session()));
        if (connection.pendingDials >= gateway.config().limits().pendingDialsPerConnection()) {
            refuse(stream, request, grant, TunnelError.TOO_MANY_STREAMS, "pending_dial_limit");
            return;
        }
        String host = grant.targetHost();
        if (TargetPolicy.needsDns(host)) {
            // DNS may block: resolve on the blocking executor, continue on the stream's loop.
            Executor blocking = gateway.blockingExecutor();
            blocking.execute(() -> {
                try {
                    List<InetAddress> addresses = gateway.config().targetPolicy().resolve(host);
                    stream.eventLoop().execute(() -> dial(stream, request, grant, addresses));
                } catch (PolicyException e) {
                    stream.eventLoop().execute(() ->
                            refuse(stream, request, grant, TunnelError.POLICY_REFUSED, e.code()));
                }
            });
            return;
        }
        try {
            dial(stream, request, grant, gateway.config().targetPolicy().resolve(host));
        } catch (PolicyException e) {
            refuse(stream, request, grant, TunnelError.POLICY_REFUSED, e.code());
        }
    }

    private void dial(Http2StreamChannel stream, ConnectRequest request, VerifiedGrant grant,
                      List<InetAddress> addresses) {
        if (!stream.isActive()) {
            return; // the browser gave up while we resolved
        }
        long dialStart = System.nanoTime();
        connection.pendingDials++;
        gateway.metrics().dialAttempted();
        gateway.dialer().dial(stream.eventLoop(), addresses, grant.targetPort()).addListener(f -> {
            connection.pendingDials--;
            if (!f.isSuccess()) {
                TunnelStreamException e = (TunnelStreamException) f.cause();
                refuse(stream, request, grant, e.error(), e.detail());
                return;
            }
            Channel target = (Channel) f.getNow();
            if (!stream.isActive()) {
                target.close();
                return;
            }
            String authority = request.authority().toString();
            gateway.liveStreams().register(grant, stream, connectionId, authority);
            gateway.metrics().opened();
            stream.writeAndFlush(ConnectHeaders.accepted());
            stream.pipeline().remove(this);
            long idleMillis = gateway.config().limits().streamIdleTimeout().toMillis();
            stream.pipeline().addBefore(BYTES, null, new IdleStreamCloser(idleMillis));
            String remote = target.remoteAddress().toString();
            gateway.audit().event(GatewayAuditEvent.STREAM_OPENED)
                    .put("conn", connectionId)
                    .put("stream", Integer.toString(stream.stream().id()))
                    .put("env", grant.environment())
                    .put("session", grant.session())
                    .put("jti", grant.jti())
                    .put("target", authority)
                    .put("dialed", remote)
                    .put("dialMicros", (System.nanoTime() - dialStart) / 1000)
                    .write();
            long openedAt = System.nanoTime();
            RelayHandler.link(stream, target, (fromStream, fromTarget, end) ->
                    gateway.audit().event(GatewayAuditEvent.STREAM_CLOSED)
                            .put("conn", connectionId)
                            .put("stream", Integer.toString(stream.stream().id()))
                            .put("session", grant.session())
                            .put("jti", grant.jti())
                            .put("target", authority)
                            .put("bytesToTarget", fromStream)
                            .put("bytesFromTarget", fromTarget)
                            .put("durationMillis", (System.nanoTime() - openedAt) / 1_000_000)
                            .put("why", StreamEnding.why(stream, end))
                            .write());
        });
    }

    private void refuse(Http2StreamChannel stream, ConnectRequest request, VerifiedGrant grant, TunnelError error,
                        String detail) {
        gateway.metrics().refused(error, detail);
        // A peer can repeat a refusal at will: one line per kind (token, code, detail), repeats summarized.
        gateway.audit().refused(GatewayAuditEvent.STREAM_REFUSED, line -> line
                        .put("conn", connectionId)
                        .put("stream", Integer.toString(stream.stream().id()))
                        .put("target", request == null ? null : request.authority().toString())
                        .put("session", grant == null ? null : grant.session())
                        .put("jti", grant == null ? null : grant.jti()),
                "tokenId", connection.tokenId, "code", error.code(), "detail", detail == null ? "" : detail);
        if (stream.isActive()) {
            stream.writeAndFlush(ConnectHeaders.refused(error, detail));
            // Auto-read went off when the HEADERS arrived; DATA the peer sent after them waits in the stream's
            // queue, and nobody will ever read a refused stream. Read again so channelRead releases it (and
            // anything still to come), and so the stream closes once the peer ends it; otherwise those buffers
            // (up to the stream window each) stay held, and leak when the connection closes.
            stream.config().setAutoRead(true);
        }
    }

    /**
     * Whether a failure spends its token's failure budget: not when the grant itself verified and only its use was
     * refused (another environment or target, revoked). Such a grant is cached by the verifier, so repeating it costs
     * no signature check, and an ingress retrying a revoked session must not cool down its other sessions.
     */
    static boolean spendsFailureBudget(GrantFailure failure) {
        return switch (failure) {
            case WRONG_ENVIRONMENT, WRONG_TARGET, REVOKED -> false;
            default -> true;
        };
    }

    static TunnelError grantError(GrantFailure failure) {
        return switch (failure) {
            case EXPIRED -> TunnelError.GRANT_EXPIRED;
            case REVOKED -> TunnelError.GRANT_REVOKED;
            default -> TunnelError.GRANT_REFUSED;
        };
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        FatalErrors.check(cause); // an Error means the process, not this connection, is broken
        ctx.close();
    }
}
