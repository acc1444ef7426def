package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.status.Html;
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
 * {@code Connection: close}. They say what happened in words, the action that fixes it, and reload themselves when
 * the condition can clear ({@link SelfReload}); never a secret, never a cause's exception text.
 */
public final class ErrorPages {
    /** A request in origin form: something fetched the proxy port as if it were a web server. */
    public static final String NOT_A_PROXY_REQUEST = "not_a_proxy_request";
    /** No, or a wrong, session credential in {@code Proxy-Authorization}. */
    public static final String PROXY_AUTH_REQUIRED = "proxy_auth_required";
    /** A request body stopped arriving (or dripped) for the body idle timeout ({@link RequestBodyDeadline}). */
    public static final String REQUEST_BODY_TIMEOUT = "request_body_timeout";
    /** The reserved authority of the status page ({@link StatusExchange}); port 80. */
    public static final String STATUS_HOST = "preview.localhost";
    /** The codes the ingress answers besides the {@link TunnelError} codes, with their statuses. */
    public static final Map<String, Integer> INGRESS_CODES = Map.of(NOT_A_PROXY_REQUEST, 400, PROXY_AUTH_REQUIRED, 407,
            REQUEST_BODY_TIMEOUT, 408);

    private ErrorPages() {
    }

    /**
     * What a page says: its title, what happened, the action that fixes it (null for none), and whether it reloads
     * itself when the condition clears ({@link SelfReload}).
     */
    public record Words(String title, String happened, String fix, boolean reloads) {
    }

    /** A page for one of the ingress's own codes: it names no fix and does not reload. */
    public static FullHttpResponse page(ByteBufAllocator alloc, int status, String code, String title, String detail,
                                        boolean html) {
        return page(alloc, status, code, new Words(title, detail, null, false), html);
    }

    static FullHttpResponse page(ByteBufAllocator alloc, int status, String code, Words words, boolean html) {
        String body;
        String type;
        if (html) {
            type = "text/html; charset=utf-8";
            body = html(code, words);
        } else {
            type = "text/plain; charset=utf-8";
            body = words.title() + ": " + words.happened() + " [" + code + "]\n";
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
        if (html) {
            response.headers().set(HttpHeaderNames.CONTENT_SECURITY_POLICY, SelfReload.POLICY);
        }
        return response;
    }

    private static String html(String code, Words words) {
        StringBuilder b = new StringBuilder(2048)
                .append("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>").append(escape(words.title()))
                .append("</title>\n<style>").append(SelfReload.STYLE).append("</style>\n");
        if (words.reloads()) {
            b.append("<noscript><meta http-equiv=\"refresh\" content=\"").append(SelfReload.NOSCRIPT_REFRESH_SECONDS)
                    .append("\"></noscript>\n");
        }
        b.append("</head>\n<body>\n<h1>").append(escape(words.title())).append("</h1>\n<p id=\"happened\">")
                .append(escape(words.happened())).append("</p>\n");
        if (words.fix() != null) {
            b.append("<h2>What to do</h2>\n<p id=\"fix\" class=\"fix\">").append(escape(words.fix()))
                    .append("</p>\n");
        }
        if (words.reloads()) {
            b.append("<p id=\"reload\" class=\"muted\">This page reloads by itself when the condition clears."
                    + "</p>\n");
        }
        b.append("<p class=\"muted\"><small>preview-tunnel error code <code>").append(escape(code))
                .append("</code>");
        if (!INGRESS_CODES.containsKey(code)) {
            b.append(" &middot; <a href=\"http://").append(STATUS_HOST)
                    .append("/\">status of this browser session</a>");
        }
        b.append("</small></p>\n");
        if (words.reloads()) {
            b.append("<script>").append(SelfReload.SCRIPT).append("</script>\n");
        }
        return b.append("</body></html>\n").toString();
    }

    /**
     * The page for a tunnel error, with a title a person can act on. {@code detail}: the ingress's own words for
     * what happened, or null for the error's generic words; {@code fix}: the action that fixes it, or null for the
     * generic one; {@code renewals}: a renewal of an expired or revoked grant may come ({@link ErrorWords#clears}).
     */
    public static FullHttpResponse forError(ByteBufAllocator alloc, TunnelError error, String authority, String detail,
                                            String fix, boolean renewals, boolean html) {
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
        String happened = detail == null || detail.isBlank() ? ErrorWords.happened(error) : detail;
        Words words = new Words(title, happened, fix == null ? ErrorWords.fix(error, authority, null) : fix,
                ErrorWords.clears(error, renewals));
        FullHttpResponse response = page(alloc, error.httpStatus(), error.code(), words, html);
        if (error.httpStatus() == 401) {
            // 401 must name a challenge (RFC 9110); this scheme is not one a browser prompts for, so the page shows.
            response.headers().set(HttpHeaderNames.WWW_AUTHENTICATE,
                    "Preview-Tunnel-Grant error=\"" + error.code() + "\"");
        }
        return response;
    }

    static String escape(String s) {
        return Html.escape(s);
    }
}
