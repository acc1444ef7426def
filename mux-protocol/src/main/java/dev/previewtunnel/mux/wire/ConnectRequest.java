package dev.previewtunnel.mux.wire;

import io.netty.handler.codec.http2.Http2Headers;

/**
 * A validated tunnel stream open: an HTTP/2 CONNECT request (RFC 9113 section 8.5).
 *
 * <p>Netty does not validate CONNECT pseudo-headers for us (netty#17421), so this does: {@code :method} must be
 * CONNECT, {@code :authority} a host:port, and {@code :scheme}/{@code :path} absent (we do not speak extended
 * CONNECT). The grant is returned as-is for the gateway to verify; it is never logged.
 */
public record ConnectRequest(Authority authority, String grant) {

    public static ConnectRequest parse(Http2Headers headers) throws TunnelStreamException {
        CharSequence method = headers.method();
        if (method == null || !"CONNECT".contentEquals(method)) {
            throw new TunnelStreamException(TunnelError.BAD_REQUEST, "method_not_connect");
        }
        if (headers.scheme() != null || headers.path() != null || headers.contains(":protocol")) {
            throw new TunnelStreamException(TunnelError.BAD_REQUEST, "connect_with_scheme_or_path");
        }
        Authority authority;
        try {
            authority = Authority.parse(headers.authority());
        } catch (IllegalArgumentException e) {
            throw new TunnelStreamException(TunnelError.BAD_REQUEST, "bad_authority");
        }
        CharSequence grant = headers.get(MuxProtocol.GRANT_HEADER);
        if (grant == null || grant.length() == 0) {
            throw new TunnelStreamException(TunnelError.GRANT_REFUSED, "grant_missing");
        }
        if (headers.getAll(MuxProtocol.GRANT_HEADER).size() != 1) {
            throw new TunnelStreamException(TunnelError.BAD_REQUEST, "duplicate_grant");
        }
        return new ConnectRequest(authority, grant.toString());
    }

    @Override
    public String toString() {
        // Never print the grant.
        return "ConnectRequest[" + authority + "]";
    }
}
