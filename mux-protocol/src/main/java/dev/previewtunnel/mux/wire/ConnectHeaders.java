package dev.previewtunnel.mux.wire;

import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;

/** Builds the HEADERS frames of the CONNECT exchange, so both sides agree on their shape. */
public final class ConnectHeaders {
    private ConnectHeaders() {
    }

    /** The opening request of a stream: {@code CONNECT authority} with the grant header. */
    public static Http2HeadersFrame connect(Authority authority, String grant) {
        Http2Headers headers = new DefaultHttp2Headers()
                .method("CONNECT")
                .authority(authority.toString())
                .add(MuxProtocol.GRANT_HEADER, grant);
        return new DefaultHttp2HeadersFrame(headers, false);
    }

    /** The target was dialed; DATA may flow both ways. */
    public static Http2HeadersFrame accepted() {
        return new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().status("200"), false);
    }

    /** The stream is refused; ends the stream. {@code detail} must not contain secrets. */
    public static Http2HeadersFrame refused(TunnelError error, String detail) {
        Http2Headers headers = new DefaultHttp2Headers()
                .status(Integer.toString(error.httpStatus()))
                .add(MuxProtocol.ERROR_HEADER, error.code());
        if (detail != null && !detail.isEmpty()) {
            headers.add(MuxProtocol.ERROR_DETAIL_HEADER, detail);
        }
        return new DefaultHttp2HeadersFrame(headers, true);
    }

    /**
     * Reads a CONNECT response: returns normally for 200, throws the typed error otherwise.
     */
    public static void checkAccepted(Http2Headers headers) throws TunnelStreamException {
        CharSequence status = headers.status();
        if (status != null && "200".contentEquals(status)) {
            return;
        }
        CharSequence code = headers.get(MuxProtocol.ERROR_HEADER);
        CharSequence detail = headers.get(MuxProtocol.ERROR_DETAIL_HEADER);
        TunnelError error = code == null ? TunnelError.PROTOCOL_ERROR : TunnelError.fromCode(code);
        throw new TunnelStreamException(error, detail == null ? "status " + status : detail.toString());
    }
}
