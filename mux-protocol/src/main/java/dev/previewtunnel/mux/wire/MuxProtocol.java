package dev.previewtunnel.mux.wire;

import io.netty.util.AsciiString;

/**
 * Constants of the tunnel wire protocol: HTTP/2 frames carried in WebSocket binary messages.
 *
 * <p>The protocol version travels as the WebSocket subprotocol ({@code ptun.v1}); a gateway that does not
 * speak the client's version answers the upgrade with 426 and a JSON body naming both versions, so that
 * mismatched builds fail with a message instead of a confusing HTTP/2 error.
 */
public final class MuxProtocol {
    /** Version of the framing and header contract below. Bump on any incompatible change. */
    public static final int VERSION = 1;
    public static final String SUBPROTOCOL_PREFIX = "ptun.v";
    public static final String SUBPROTOCOL = SUBPROTOCOL_PREFIX + VERSION;

    /** Default HTTP path of the gateway's tunnel endpoint. */
    public static final String DEFAULT_PATH = "/tunnel";

    /** Request header of a CONNECT stream carrying the stream's grant (a JWT). */
    public static final AsciiString GRANT_HEADER = AsciiString.cached("ptun-grant");
    /** Response header with the machine-readable {@link TunnelError} code when a stream is refused. */
    public static final AsciiString ERROR_HEADER = AsciiString.cached("ptun-error");
    /** Response header with a finer reason (for example which grant check failed); never a secret. */
    public static final AsciiString ERROR_DETAIL_HEADER = AsciiString.cached("ptun-error-detail");

    /** HTTP header of the WebSocket upgrade carrying the connection token (never the URL). */
    public static final String TOKEN_HEADER = "Authorization";
    public static final String TOKEN_SCHEME = "Bearer ";

    /**
     * The largest WebSocket message either side sends. HTTP/2 runs over the messages as a byte stream (a frame
     * may span messages), so this is a chunking size, not a frame limit; it is fixed by the protocol rather than
     * taken from local settings so that a receiver configured with a smaller message limit than its peer's never
     * sees a message it must refuse. Every receiver accepts at least this much ({@link MuxSettings}). 16 KiB keeps
     * a masked client frame (payload and 8-byte header in one buffer) inside Netty's pooled sizes; see
     * {@code ReadBuffers}.
     */
    public static final int MAX_SENT_MESSAGE = 16 * 1024;

    private MuxProtocol() {
    }

    /** Parses {@code ptun.vN} to N, or -1 when the string is not a tunnel subprotocol. */
    public static int parseSubprotocolVersion(String subprotocol) {
        if (subprotocol == null || !subprotocol.startsWith(SUBPROTOCOL_PREFIX)) {
            return -1;
        }
        try {
            return Integer.parseInt(subprotocol.substring(SUBPROTOCOL_PREFIX.length()).trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
