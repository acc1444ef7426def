package dev.previewtunnel.mux.wire;

import java.util.Locale;

/**
 * Why a stream could not be opened or ended abnormally. Each code travels from gateway to ingress in the
 * {@link MuxProtocol#ERROR_HEADER} of the CONNECT response and reaches the browser as a page and a header.
 */
public enum TunnelError {
    /** The stream's grant failed verification (signature, audience, target, environment...). */
    GRANT_REFUSED(403),
    /** The stream's grant is past its expiry. */
    GRANT_EXPIRED(401),
    /**
     * The stream's grant or its browser session was revoked. 410 Gone, a status no other failure uses, so that a
     * person and a script can tell "revoked for good" from "never granted" (403) and "expired" (401).
     */
    GRANT_REVOKED(410),
    /** The target address is not allowed by the gateway's target policy. */
    POLICY_REFUSED(403),
    /** The target refused the TCP connection (nothing listening). */
    TARGET_REFUSED(502),
    /** The TCP connection to the target timed out. */
    DIAL_TIMEOUT(504),
    /** The target name could not be resolved or no address could be reached. */
    TARGET_UNREACHABLE(502),
    /** The CONNECT request itself was malformed (missing authority, wrong pseudo-headers...). */
    BAD_REQUEST(400),
    /** A concurrency or rate limit was reached; retry later. */
    TOO_MANY_STREAMS(429),
    /** The gateway is draining and accepts no new streams. */
    SHUTTING_DOWN(503),
    /** Desktop side: no tunnel connection to the gateway could be established. */
    GATEWAY_UNREACHABLE(502),
    /** Desktop side: the gateway did not answer the stream open in time. */
    GATEWAY_TIMEOUT(504),
    /** Desktop side: the requested authority is not granted to this browser session. */
    NOT_GRANTED(403),
    /** The stream was reset or the tunnel connection was lost while the stream was open. */
    STREAM_RESET(502),
    /** The peer sent something the protocol does not allow. */
    PROTOCOL_ERROR(502);

    private final int httpStatus;
    private final String code;

    TunnelError(int httpStatus) {
        this.httpStatus = httpStatus;
        this.code = name().toLowerCase(Locale.ROOT);
    }

    /** HTTP status used on the CONNECT response and on the page shown to the browser. */
    public int httpStatus() {
        return httpStatus;
    }

    /** Wire code, e.g. {@code grant_expired}. */
    public String code() {
        return code;
    }

    /** Maps a wire code back; unknown codes (from a newer peer) become {@link #PROTOCOL_ERROR}. */
    public static TunnelError fromCode(CharSequence code) {
        if (code != null) {
            for (TunnelError e : values()) {
                if (e.code.contentEquals(code)) {
                    return e;
                }
            }
        }
        return PROTOCOL_ERROR;
    }
}
