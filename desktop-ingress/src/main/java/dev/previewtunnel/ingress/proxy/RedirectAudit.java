package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.IngressAuditEvent;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.local.audit.AuditLog;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;

/**
 * An absolute redirect to an authority this session has no grant for is passed to the browser unchanged (it will be
 * refused, or go direct by policy) and recorded as {@code redirect_not_granted}. Only scheme and authority are
 * logged: the path and query of an OAuth callback can carry codes.
 */
final class RedirectAudit {
    private RedirectAudit() {
    }

    static void check(AuditLog audit, BrowserSession session, Route route, HttpResponse response) {
        int code = response.status().code();
        String location = response.headers().get(HttpHeaderNames.LOCATION);
        if (code < 300 || code >= 400 || location == null) {
            return;
        }
        try {
            URI to = new URI(location);
            if (!to.isAbsolute() || to.getHost() == null) {
                return; // relative: stays on the granted authority
            }
            String host = to.getHost().startsWith("[") ? to.getHost().substring(1, to.getHost().length() - 1)
                    : to.getHost();
            int port = to.getPort() != -1 ? to.getPort() : "https".equalsIgnoreCase(to.getScheme()) ? 443 : 80;
            Authority target = new Authority(host, port);
            if (session.authorities().route(target).isEmpty()) {
                audit.event(IngressAuditEvent.REDIRECT_NOT_GRANTED)
                        .put("session", session.id())
                        .put("from", route.requested().toString())
                        .put("to", to.getScheme() + "://" + target)
                        .put("status", code)
                        .put("policy", session.egress().name().toLowerCase(Locale.ROOT))
                        .write();
            }
        } catch (URISyntaxException | IllegalArgumentException e) {
            // Not a URL we can judge; the browser will handle it.
        }
    }
}
