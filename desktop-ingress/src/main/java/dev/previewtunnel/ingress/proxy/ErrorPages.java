package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.TunnelError;
import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The small pages the browser sees when the ingress cannot carry a request: plain HTML for navigations, a short
 * text for everything else, always with the machine-readable {@code ptun-error} header and
 * {@code Connection: close}. They say what was asked for and why it failed, never a secret.
 */
public final class ErrorPages {
    /** A request in origin form: something fetched the proxy port as if it were a web server. */
    public static final String NOT_A_PROXY_REQUEST = "not_a_proxy_request";
    /** No, or a wrong, session credential in {@code Proxy-Authorization}. */
    public static final String PROXY_AUTH_REQUIRED = "proxy_auth_required";
    /** A request body stopped arriving (or dripped) for the body idle timeout ({@link RequestBodyDeadline}). */
    public static final String REQUEST_BODY_TIMEOUT = "request_body_timeout";
    /** The codes the ingress answers besides the {@link TunnelError} codes, with their statuses. */
    public static final Map<String, Integer> INGRESS_CODES = Map.of(NOT_A_PROXY_REQUEST, 400, PROXY_AUTH_REQUIRED, 407,
            REQUEST_BODY_TIMEOUT, 408);

    private ErrorPages() {
    }

    public static FullHttpResponse page(ByteBufAllocator alloc, int status, String code, String title, String detail,
                                        boolean html) {
        String body;
        String type;
        if (html) {
            type = "text/html; charset=utf-8";
            body = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>" + escape(title)
                    + "</title></head>\n<body style=\"font-family:sans-serif;max-width:40em;margin:3em auto\">\n"
                    + "<h1>" + escape(title) + "</h1>\n<p>" + escape(detail) + "</p>\n"
                    + "<p><small>preview-tunnel error code <code>" + escape(code) + "</code></small></p>\n"
                    + "</body></html>\n";
        } else {
            type = "text/plain; charset=utf-8";
            body = title + ": " + detail + " [" + code + "]\n";
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                HttpResponseStatus.valueOf(status), alloc.buffer(bytes.length).writeBytes(bytes));
        response.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, type)
                .set(HttpHeaderNames.CONTENT_LENGTH, bytes.length)
                .set(HttpHeaderNames.CACHE_CONTROL, "no-store")
                .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE)
                .set(MuxProtocol.ERROR_HEADER, code);
        return response;
    }

    /** The page for a tunnel error, with a title a person can act on. */
    public static FullHttpResponse forError(ByteBufAllocator alloc, TunnelError error, String authority, String detail,
                                            boolean html) {
        String title = switch (error) {
            case NOT_GRANTED -> authority + " is not granted to this browser session";
            case GRANT_EXPIRED -> "The grant for " + authority + " has expired";
            case GRANT_REVOKED -> "The grant for " + authority + " was revoked";
            case GRANT_REFUSED -> "The environment refused the grant for " + authority;
            // The gateway's target policy or this session's direct-egress policy: the detail says which.
            case POLICY_REFUSED -> "The address policy does not allow " + authority;
            case TARGET_REFUSED -> "Nothing is listening on " + authority + " in the environment";
            case DIAL_TIMEOUT -> "Connecting to " + authority + " in the environment timed out";
            case TARGET_UNREACHABLE -> authority + " cannot be reached in the environment";
            case GATEWAY_UNREACHABLE -> "The environment gateway is unreachable";
            case GATEWAY_TIMEOUT -> "The environment gateway did not answer in time";
            case TOO_MANY_STREAMS -> "Too many connections to the environment; retry shortly";
            case SHUTTING_DOWN -> "The environment gateway is restarting";
            case BAD_REQUEST -> "Bad request";
            default -> "The tunnel to " + authority + " failed";
        };
        FullHttpResponse response = page(alloc, error.httpStatus(), error.code(), title,
                detail == null ? "" : detail, html);
        if (error.httpStatus() == 401) {
            // 401 must name a challenge (RFC 9110); this scheme is not one a browser prompts for, so the page shows.
            response.headers().set(HttpHeaderNames.WWW_AUTHENTICATE,
                    "Preview-Tunnel-Grant error=\"" + error.code() + "\"");
        }
        return response;
    }

    static String escape(String s) {
        StringBuilder b = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c < 0x20 && c != '\n' ? ' ' : c);
            }
        }
        return b.toString();
    }
}
