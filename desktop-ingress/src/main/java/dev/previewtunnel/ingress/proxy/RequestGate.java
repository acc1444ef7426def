package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.EgressPolicy;
import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;

import java.util.List;

/**
 * What to do with a request head, decided before anything is opened and from the head and the sessions alone:
 * refuse it (a page and an audit line), tunnel it ({@code CONNECT}) or forward it (absolute form). In order: broken
 * framing is a 400; a request-target in origin form ("a page fetched the ingress port directly") is a 400, asking for
 * no credential; a missing or wrong {@code Proxy-Authorization} is a 407; a bad target or Host is a 400; an authority
 * the session has no grant for (and may not reach directly) is a 403 (docs/security.md, "Attribution by proxy
 * credential"). An absolute-form request to {@code preview.localhost:80} goes to the session's status page, only
 * after its credential checked.
 */
final class RequestGate {
    /** The gate's answer; {@link #session} is the authenticated session, or null when refused before that. */
    sealed interface Decision permits Refuse, Tunnel, Forward, Status {
        BrowserSession session();
    }

    record Refuse(BrowserSession session, Refusal refusal) implements Decision {
    }

    /** {@code CONNECT}: one stream, then a raw relay. */
    record Tunnel(BrowserSession session, Route route) implements Decision {
    }

    /** A request to the status page's reserved authority, answered by the ingress itself ({@link StatusExchange}). */
    record Status(BrowserSession session, StatusExchange.Kind kind) implements Decision {
    }

    /** An absolute-form request, sent on in {@code originForm}. */
    record Forward(BrowserSession session, Route route, String originForm) implements Decision {
    }

    private RequestGate() {
    }

    /** {@code reusedConnection}: the connection already carried a proxied exchange. */
    static Decision decide(HttpRequest req, SessionRegistry sessions, boolean reusedConnection) {
        String framing = RequestFraming.headProblem(req);
        if (framing != null) {
            return new Refuse(null, Refusal.of(TunnelError.BAD_REQUEST, "request", framing, "bad_request"));
        }
        String uri = req.uri();
        boolean connect = HttpMethod.CONNECT.equals(req.method());
        if (!connect && (uri.startsWith("/") || "*".equals(uri))) {
            return new Refuse(null, reusedConnection ? Refusal.originFormOnReusedConnection()
                    : Refusal.notAProxyRequest());
        }
        BrowserSession session = sessions.authenticate(req.headers().get(HttpHeaderNames.PROXY_AUTHORIZATION))
                .orElse(null);
        if (session == null) {
            return new Refuse(null, Refusal.proxyAuthRequired());
        }
        Authority requested;
        String originForm = null;
        try {
            if (connect) {
                requested = RequestTarget.connect(uri);
            } else {
                RequestTarget.Absolute target = RequestTarget.absolute(uri);
                requested = target.authority();
                originForm = target.originForm();
            }
        } catch (RequestTarget.UnsupportedException e) {
            return new Refuse(session, Refusal.of(TunnelError.BAD_REQUEST, e.safeTarget(),
                    "only http:// absolute-form requests and CONNECT are proxied", "unsupported_scheme"));
        } catch (IllegalArgumentException e) {
            return new Refuse(session, Refusal.of(TunnelError.BAD_REQUEST, "request",
                    "the request target is not a valid authority or URL", "bad_target"));
        }
        List<String> hosts = req.headers().getAll(HttpHeaderNames.HOST);
        if (!hosts.isEmpty() && !RequestTarget.hostMatches(hosts, requested, connect ? requested.port() : 80)) {
            // Two Host fields, or one that disagrees with the request line: one of them is lying (request
            // smuggling, rebinding). RFC 9112 section 3.2 makes both a 400.
            return new Refuse(session, Refusal.of(TunnelError.BAD_REQUEST, requested.toString(),
                    "the Host header does not match the request target", "host_mismatch"));
        }
        if (!connect && StatusExchange.isStatusAuthority(requested)) {
            // Before any route: no grant can name the reserved authority (virtual hosts are NAME.ENV.SUFFIX, two
            // labels below the default suffix). CONNECT to it is refused below as not granted.
            return new Status(session, StatusExchange.Kind.of(req.method(), originForm));
        }
        Route route = session.authorities().route(requested).orElse(null);
        if (route == null && session.egress() == EgressPolicy.DIRECT
                && !session.authorities().isVirtualHost(requested.host())) {
            // No grant, but the session may reach public hosts directly (checked again after resolving).
            route = new Route(requested, requested, null, null);
        }
        if (route == null) {
            return new Refuse(session, Refusal.of(TunnelError.NOT_GRANTED, requested.toString(),
                    "Ask for a grant for this authority, or open one of the granted previews.", "not_granted"));
        }
        return connect ? new Tunnel(session, route) : new Forward(session, route, originForm);
    }
}
