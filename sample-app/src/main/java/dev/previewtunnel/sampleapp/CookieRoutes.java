package dev.previewtunnel.sampleapp;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.QueryStringDecoder;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Cookies and redirects: {@code /cookie/set}, {@code /cookie/get}, {@code /redirect} and the login shape
 * {@code /login} and {@code /login/absolute} (a redirect that sets a session cookie).
 */
final class CookieRoutes {
    private CookieRoutes() {
    }

    static void set(Reply reply, QueryStringDecoder query) {
        Map<String, List<String>> params = query.parameters();
        if (params.isEmpty()) {
            reply.badRequest("usage: /cookie/set?name=value\n");
            return;
        }
        List<String> setCookies = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : params.entrySet()) {
            String name = e.getKey();
            if (!isToken(name)) {
                reply.badRequest("invalid cookie name\n");
                return;
            }
            for (String value : e.getValue()) {
                if (!isCookieValue(value)) {
                    reply.badRequest("invalid cookie value\n");
                    return;
                }
                setCookies.add(name + "=" + value + "; Path=/; HttpOnly; SameSite=Lax");
            }
        }
        reply.respond(HttpResponseStatus.OK, Reply.TEXT, "cookie set\n",
                r -> r.headers().add(HttpHeaderNames.SET_COOKIE, setCookies));
    }

    static void get(Reply reply, HttpRequest req) {
        reply.text(HttpResponseStatus.OK, String.join("; ", req.headers().getAll(HttpHeaderNames.COOKIE)));
    }

    static void redirect(Reply reply, QueryStringDecoder query) {
        String location = QueryParams.first(query, "to");
        if (location.isEmpty() || location.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            reply.badRequest("usage: /redirect?to=/path\n");
            return;
        }
        reply.respond(HttpResponseStatus.FOUND, Reply.TEXT, "",
                r -> r.headers().set(HttpHeaderNames.LOCATION, location));
    }

    /**
     * The usual login shape: the response that sets the session cookie is itself the redirect. {@code Location} is
     * {@code to} as given (relative), or for {@code /login/absolute} the same path made absolute with the request's
     * own {@code Host} (same authority), the way frameworks build "return to" URLs.
     */
    static void login(Reply reply, HttpRequest req, QueryStringDecoder query, boolean absolute) {
        String to = QueryParams.first(query, "to");
        String session = QueryParams.first(query, "session");
        String host = req.headers().get(HttpHeaderNames.HOST, "");
        boolean relativePath = to.startsWith("/") && !to.startsWith("//")
                && to.chars().noneMatch(c -> c <= 0x20 || c == 0x7f);
        if (!relativePath || session.isEmpty() || !isCookieValue(session)
                || (absolute && !host.matches("[A-Za-z0-9.\\[\\]:-]+"))) {
            reply.badRequest("usage: /login?to=/path&session=value (and a Host header)\n");
            return;
        }
        String location = absolute ? "http://" + host + to : to;
        reply.respond(HttpResponseStatus.FOUND, Reply.TEXT, "", r -> {
            r.headers().set(HttpHeaderNames.LOCATION, location);
            r.headers().set(HttpHeaderNames.SET_COOKIE, "session=" + session + "; Path=/; HttpOnly; SameSite=Lax");
        });
    }

    /** RFC 9110 token. */
    static boolean isToken(String s) {
        if (s.isEmpty()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                    || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    /** RFC 6265 cookie-octet* (no quotes, commas, semicolons, backslashes, whitespace or controls). */
    static boolean isCookieValue(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x21 || c > 0x7e || c == '"' || c == ',' || c == ';' || c == '\\') {
                return false;
            }
        }
        return true;
    }
}
