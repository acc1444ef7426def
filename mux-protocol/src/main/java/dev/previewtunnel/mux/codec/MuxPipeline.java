package dev.previewtunnel.mux.codec;

import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.relay.StalledStreams;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.http.websocketx.WebSocket08FrameDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http2.DefaultHttp2WindowUpdateFrame;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;

/**
 * Installs the tunnel protocol on a channel whose WebSocket handshake has completed:
 *
 * <pre>
 *   WriteBacklogLimit -> PeerSilenceWatchdog -> [TLS, WebSocket frame codec] -> WebSocketByteBridge -> Http2FrameCodec
 *       -> UnknownFrames -> KeepAliveHandler -> StalledStreams -> Http2MultiplexHandler -> [caller's connection handler]
 *       -> PeerErrors
 * </pre>
 *
 * The parent channel keeps auto-read on for its whole life (netty#6552): backpressure is applied per stream,
 * by child channels that read on demand, never by stopping the connection. What the peer provokes (PONGs, ACKs,
 * resets) and leaves unread is bounded by {@link WriteBacklogLimit}, which closes the connection instead.
 */
public final class MuxPipeline {
    private static final String BRIDGE = "ptun-ws-bridge";
    public static final String CODEC = "ptun-h2-codec";
    private static final String MULTIPLEX = "ptun-h2-multiplex";
    private static final String ERRORS = "ptun-errors";

    private MuxPipeline() {
    }

    /**
     * Decoder limits for the WebSocket layer beneath the tunnel. A protocol violation only raises an exception:
     * {@link WebSocketByteBridge} answers it with the close frame (the decoder's own close would go through the
     * HTTP/2 codec, which would send GOAWAY after the close frame and keep the connection for its graceful timeout).
     */
    public static WebSocketDecoderConfig decoderConfig(MuxSettings settings, boolean server) {
        return WebSocketDecoderConfig.newBuilder()
                .maxFramePayloadLength(settings.maxWebSocketMessage())
                .expectMaskedFrames(server)
                .allowMaskMismatch(false)
                .allowExtensions(false)
                .closeOnProtocolViolation(false)
                .build();
    }

    /**
     * @param inboundStreamHandler handler for streams the peer opens (the gateway's acceptor), or null on the
     *                             side that only opens streams
     * @param connectionHandler    last handler of the parent pipeline: sees GOAWAY and connection close
     */
    public static Http2FrameCodec install(Channel channel, boolean server, MuxSettings settings,
                                          ChannelHandler inboundStreamHandler, ChannelHandler connectionHandler) {
        Http2Settings h2 = new Http2Settings()
                .initialWindowSize(settings.streamWindow())
                .maxConcurrentStreams(settings.maxConcurrentStreams())
                .maxFrameSize(settings.maxFrameSize())
                .maxHeaderListSize(settings.maxHeaderListSize());
        if (!server) {
            h2.pushEnabled(false);
        }
        Http2FrameCodec codec = new TunnelCodecBuilder(server)
                .initialSettings(h2)
                .validateHeaders(true)
                // CONNECT has no :scheme/:path; ConnectRequest validates the pseudo-headers itself.
                .validateRequiredPseudoHeaders(false)
                .decoderEnforceMaxRstFramesPerWindow(settings.maxRstPerWindow(), settings.rstWindowSeconds())
                // The grant is a bearer secret: never enter it into the HPACK dynamic table.
                .headerSensitivityDetector((name, value) -> MuxProtocol.GRANT_HEADER.contentEqualsIgnoreCase(name))
                // Bounds a close that is not a drain (idle reaping, errors; a keepalive failure closes the socket
                // itself, see PeerSilenceWatchdog): a dead peer's streams must not hold the connection. A drain
                // sets its own bound (closeGracefully).
                .gracefulShutdownTimeoutMillis(settings.pingTimeout().toMillis())
                .build();

        ChannelPipeline p = channel.pipeline();
        cumulateWithoutCopies(p, codec, server);
        // First: liveness counts every byte received, and its close bypasses the codec's graceful close.
        p.addFirst("ptun-idle", new PeerSilenceWatchdog(settings.pingInterval(), settings.pingTimeout()));
        // The server's WebSocket decoder is built from decoderConfig (violations answered by the bridge); the
        // client's comes from Netty's client handshaker, which answers them itself.
        p.addLast(BRIDGE, new WebSocketByteBridge(MuxProtocol.MAX_SENT_MESSAGE, server, !server));
        p.addLast(CODEC, codec);
        p.addLast("ptun-unknown-frames", new UnknownFrames());
        p.addLast("ptun-keepalive", new KeepAliveHandler());
        p.addLast("ptun-stalled-streams", new StalledStreams(settings.streamWindow()));
        p.addLast(MULTIPLEX, inboundStreamHandler == null
                ? new Http2MultiplexHandler(new RejectInboundStreams())
                : new Http2MultiplexHandler(inboundStreamHandler));
        if (connectionHandler != null) {
            p.addLast("ptun-connection", connectionHandler);
        }
        p.addLast(ERRORS, PeerErrors.INSTANCE);
        WriteBacklogLimit.install(channel, settings.maxWriteBacklog());
        // Netty grows the connection window only to the initial stream window; grow it to the stream budget
        // so that stalled streams can never pin the shared window (see MuxSettings).
        int extra = settings.connectionWindow() - settings.streamWindow();
        if (extra > 0) {
            channel.pipeline().context(MULTIPLEX).writeAndFlush(new DefaultHttp2WindowUpdateFrame(extra));
        }
        return codec;
    }

    /**
     * Drains a tunnel connection: GOAWAY now, then the close once its live streams have ended, or after
     * {@code grace} at the latest. The codec's own bound (the keepalive timeout, set at install for closes that are
     * not drains) is replaced first, so a {@code --drain-timeout} longer than the keepalive timeout is honoured.
     * Safe from any thread; returns a future that completes once the drain is over: when the connection has
     * closed, whether its streams ended, the grace period ran out or the peer closed it first.
     */
    public static ChannelFuture closeGracefully(Channel channel, Duration grace) {
        ChannelPromise closed = channel.newPromise();
        // HTTP/2's graceful close completes its promise when the streams have ended or its timeout fires, not when
        // the peer closes the connection first (its streams end with it, but that path does not reach the promise):
        // a stop then waited the whole grace period for a connection that was gone. The drain the caller waits for
        // ends with whichever comes first. (The codec keeps its own promise: it completes that one itself later.)
        ChannelPromise drained = channel.newPromise();
        closed.addListener(f -> drained.trySuccess());
        channel.closeFuture().addListener(f -> drained.trySuccess());
        Runnable drain = () -> {
            Http2FrameCodec codec = channel.pipeline().get(Http2FrameCodec.class);
            if (codec != null) {
                codec.gracefulShutdownTimeoutMillis(Math.max(0, grace.toMillis()));
            }
            channel.close(closed);
        };
        if (channel.eventLoop().inEventLoop()) {
            drain.run();
        } else {
            try {
                channel.eventLoop().execute(drain); // the codec's field is the event loop's
            } catch (java.util.concurrent.RejectedExecutionException loopGone) {
                channel.close(closed);
            }
        }
        return drained;
    }

    /**
     * HTTP/2 frames straddle WebSocket messages, and WebSocket frames straddle socket reads, so most input reaches
     * each decoder in two pieces; Netty's default cumulator then copies the pieces into one buffer (and, past
     * 16 KiB, into a new unpooled one). A composite cumulation holds large pieces instead, a bounded number of them
     * ({@link BoundedCompositeCumulator}): the HTTP/2 decoder reads only frame headers and its DATA payloads go on
     * to the relay's gathering writes as slices. The server's WebSocket decoder keeps Netty's cumulator: it copies
     * every payload to unmask it anyway (docs/performance.md, finding 13).
     */
    private static void cumulateWithoutCopies(ChannelPipeline p, Http2FrameCodec codec, boolean server) {
        codec.setCumulator(BoundedCompositeCumulator.INSTANCE);
        WebSocket08FrameDecoder webSocketDecoder = p.get(WebSocket08FrameDecoder.class);
        if (!server && webSocketDecoder != null) {
            webSocketDecoder.setCumulator(BoundedCompositeCumulator.INSTANCE);
        }
    }

    /**
     * The last handler of a tunnel connection. An exception that gets here is, in the normal case, the peer's: an
     * HTTP/2 connection error (the codec has already sent GOAWAY with the reason and closes the connection itself),
     * a malformed WebSocket frame on the side whose decoder answers it itself, or an I/O error of a socket that is
     * going away. None deserves a warning with a stack trace per connection (which is what Netty logs for an
     * exception that reaches the end of a pipeline): a misbehaving peer could flood the log. Anything else is our
     * bug: logged as a warning. Except for HTTP/2 errors (closing here would send a GOAWAY without the error code
     * before the codec's own), the connection is closed rather than left in an unknown state.
     */
    @ChannelHandler.Sharable
    static final class PeerErrors extends ChannelInboundHandlerAdapter {
        static final PeerErrors INSTANCE = new PeerErrors();
        private static final Logger log = LoggerFactory.getLogger(MuxPipeline.class);

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            FatalErrors.check(cause); // an Error means the process, not this connection, is broken
            if (Http2CodecUtil.getEmbeddedHttp2Exception(cause) != null) {
                log.debug("tunnel connection {}: HTTP/2 error from the peer: {}", ctx.channel().remoteAddress(),
                        cause.toString());
                return;
            }
            if (cause instanceof DecoderException || cause instanceof IOException) {
                log.debug("tunnel connection {} ended: {}", ctx.channel().remoteAddress(), cause.toString());
            } else {
                log.warn("unexpected error on tunnel connection {}, closing it", ctx.channel().remoteAddress(),
                        cause);
            }
            ctx.close();
        }
    }
}
