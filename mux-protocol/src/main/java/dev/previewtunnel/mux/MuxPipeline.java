package dev.previewtunnel.mux;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http2.DefaultHttp2WindowUpdateFrame;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.timeout.IdleStateHandler;

import java.util.concurrent.TimeUnit;

/**
 * Installs the tunnel protocol on a channel whose WebSocket handshake has completed:
 *
 * <pre>
 *   [WebSocket frame codec] -> idle -> WebSocketByteBridge -> Http2FrameCodec -> KeepAliveHandler
 *       -> Http2MultiplexHandler -> [caller's connection handler]
 * </pre>
 *
 * The parent channel keeps auto-read on for its whole life (netty#6552): backpressure is applied per stream,
 * by child channels that read on demand, never by stopping the connection.
 */
public final class MuxPipeline {
    public static final String BRIDGE = "ptun-ws-bridge";
    public static final String CODEC = "ptun-h2-codec";
    public static final String MULTIPLEX = "ptun-h2-multiplex";

    private MuxPipeline() {
    }

    /** Decoder limits for the WebSocket layer beneath the tunnel. */
    public static WebSocketDecoderConfig decoderConfig(MuxSettings settings, boolean server) {
        return WebSocketDecoderConfig.newBuilder()
                .maxFramePayloadLength(settings.maxWebSocketMessage())
                .expectMaskedFrames(server)
                .allowMaskMismatch(false)
                .allowExtensions(false)
                .closeOnProtocolViolation(true)
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
                .gracefulShutdownTimeoutMillis(settings.pingTimeout().toMillis())
                .build();

        ChannelPipeline p = channel.pipeline();
        long idleMillis = settings.pingInterval().toMillis();
        p.addLast("ptun-idle", new IdleStateHandler(0, 0, idleMillis, TimeUnit.MILLISECONDS));
        p.addLast(BRIDGE, new WebSocketByteBridge(settings.maxWebSocketMessage()));
        p.addLast(CODEC, codec);
        p.addLast("ptun-keepalive", new KeepAliveHandler(settings.pingTimeout()));
        p.addLast(MULTIPLEX, inboundStreamHandler == null
                ? new Http2MultiplexHandler(new RejectInboundStreams())
                : new Http2MultiplexHandler(inboundStreamHandler));
        if (connectionHandler != null) {
            p.addLast("ptun-connection", connectionHandler);
        }
        // Netty grows the connection window only to the initial stream window; grow it to the stream budget
        // so that stalled streams can never pin the shared window (see MuxSettings).
        int extra = settings.connectionWindow() - settings.streamWindow();
        if (extra > 0) {
            channel.pipeline().context(MULTIPLEX).writeAndFlush(new DefaultHttp2WindowUpdateFrame(extra));
        }
        return codec;
    }
}
