package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.EgressPolicy;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxProtocol;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Base64;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/**
 * The request gate with plain objects, no channel: a request head and the sessions in, refuse, tunnel or forward
 * out, in the order the gate judges (framing, origin form, credential, target, Host, grant).
 */
class RequestGateTest {
    private final SessionRegistry sessions = new SessionRegistry();
    private BrowserSession session;
    private String credential;

    @BeforeEach
    void grantOne(@TempDir Path dir) throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        GrantIssuer issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        session = sessions.add(BrowserSession.create("gate-test"));
        session.authorities().add(issuer.issueGrant(GrantSpec.tcp("e1", "gate-test", "127.0.0.1", 5173),
                Duration.ofMinutes(10)));
        credential = "Basic " + Base64.getEncoder().encodeToString(
                (session.username() + ":" + session.password()).getBytes(StandardCharsets.UTF_8));
    }

    private HttpRequest request(HttpMethod method, String uri, boolean authenticated) {
        HttpRequest req = new DefaultHttpRequest(HttpVersion.HTTP_1_1, method, uri);
        if (authenticated) {
            req.headers().set(HttpHeaderNames.PROXY_AUTHORIZATION, credential);
        }
        return req;
    }

    private static Refusal refusal(RequestGate.Decision d) {
        return assertInstanceOf(RequestGate.Refuse.class, d).refusal();
    }

    /** The page a refusal makes: its ptun-error code, or null when the connection is closed unanswered. */
    private static String pageCode(Refusal r) {
        FullHttpResponse page = r.page(UnpooledByteBufAllocator.DEFAULT, false);
        if (page == null) {
            return null;
        }
        try {
            return page.headers().get(MuxProtocol.ERROR_HEADER);
        } finally {
            page.release();
        }
    }

    @Test
    void aGrantedAbsoluteFormRequestIsForwardedInOriginForm() {
        RequestGate.Decision d = RequestGate.decide(request(HttpMethod.GET, "http://127.0.0.1:5173/a?b=c", true),
                sessions, false);
        RequestGate.Forward f = assertInstanceOf(RequestGate.Forward.class, d);
        assertSame(session, f.session());
        assertEquals("/a?b=c", f.originForm());
        assertEquals(new Authority("127.0.0.1", 5173), f.route().target());
        assertNotNull(f.route().grant());
    }

    @Test
    void aGrantedConnectIsTunnelled() {
        RequestGate.Decision d = RequestGate.decide(request(HttpMethod.CONNECT, "127.0.0.1:5173", true), sessions,
                false);
        RequestGate.Tunnel t = assertInstanceOf(RequestGate.Tunnel.class, d);
        assertEquals(new Authority("127.0.0.1", 5173), t.route().target());
    }

    @Test
    void theStatusAuthorityIsTheSessionsStatusPageOnlyAfterItsCredential() {
        assertEquals(ErrorPages.PROXY_AUTH_REQUIRED, pageCode(refusal(RequestGate.decide(
                request(HttpMethod.GET, "http://preview.localhost/", false), sessions, false))));
        for (String uri : new String[] {"http://preview.localhost/", "http://preview.localhost:80/?x=1",
                "http://PREVIEW.localhost./"}) {
            RequestGate.Status s = assertInstanceOf(RequestGate.Status.class,
                    RequestGate.decide(request(HttpMethod.GET, uri, true), sessions, false), uri);
            assertSame(session, s.session());
            assertEquals(StatusExchange.Kind.PAGE, s.kind(), uri);
        }
        assertEquals(StatusExchange.Kind.OPEN, assertInstanceOf(RequestGate.Status.class, RequestGate.decide(
                request(HttpMethod.POST, "http://preview.localhost/open", true), sessions, false)).kind());
        for (HttpRequest other : new HttpRequest[] {request(HttpMethod.GET, "http://preview.localhost/open", true),
                request(HttpMethod.POST, "http://preview.localhost/", true),
                request(HttpMethod.DELETE, "http://preview.localhost/x", true)}) {
            assertEquals(StatusExchange.Kind.NOT_FOUND, assertInstanceOf(RequestGate.Status.class,
                    RequestGate.decide(other, sessions, false)).kind(), other.toString());
        }
        // CONNECT to it, and any other port of the name, are refused as before: no grant names them.
        assertEquals("not_granted", pageCode(refusal(RequestGate.decide(
                request(HttpMethod.CONNECT, "preview.localhost:80", true), sessions, false))));
        assertEquals("not_granted", pageCode(refusal(RequestGate.decide(
                request(HttpMethod.GET, "http://preview.localhost:8080/", true), sessions, false))));
    }

    @Test
    void anOriginFormRequestGetsThePageOnAFreshConnectionAndNothingOnAReusedOne() {
        Refusal fresh = refusal(RequestGate.decide(request(HttpMethod.GET, "/", true), sessions, false));
        assertEquals(ErrorPages.NOT_A_PROXY_REQUEST, pageCode(fresh));
        Refusal reused = refusal(RequestGate.decide(request(HttpMethod.GET, "/", true), sessions, true));
        assertNull(pageCode(reused), "closed unanswered");
        assertEquals("origin_form_on_reused_connection", reused.reason());
    }

    @Test
    void noCredentialIsA407WithItsChallenge() {
        RequestGate.Decision d = RequestGate.decide(request(HttpMethod.GET, "http://127.0.0.1:5173/", false),
                sessions, false);
        assertNull(d.session());
        FullHttpResponse page = refusal(d).page(UnpooledByteBufAllocator.DEFAULT, true);
        try {
            assertEquals(407, page.status().code());
            assertNotNull(page.headers().get(HttpHeaderNames.PROXY_AUTHENTICATE));
        } finally {
            page.release();
        }
    }

    @Test
    void anAuthorityWithoutAGrantIsRefusedWithTheSession() {
        RequestGate.Decision d = RequestGate.decide(request(HttpMethod.GET, "http://127.0.0.1:9999/", true),
                sessions, false);
        assertSame(session, d.session(), "audited with the session");
        assertEquals("not_granted", refusal(d).reason());
        assertEquals(403, refusal(d).error().httpStatus());
    }

    @Test
    void directEgressForwardsAnUngrantedPublicAuthorityWithoutAGrant() {
        session.egress(EgressPolicy.DIRECT);
        RequestGate.Forward f = assertInstanceOf(RequestGate.Forward.class, RequestGate.decide(
                request(HttpMethod.GET, "http://example.com/", true), sessions, false));
        assertNull(f.route().grant());
    }

    @Test
    void aHostThatDisagreesWithTheTargetIsA400() {
        HttpRequest req = request(HttpMethod.GET, "http://127.0.0.1:5173/", true);
        req.headers().set(HttpHeaderNames.HOST, "evil.example");
        assertEquals("host_mismatch", refusal(RequestGate.decide(req, sessions, false)).reason());
    }

    @Test
    void anHttpsAbsoluteTargetIsUnsupported() {
        Refusal r = refusal(RequestGate.decide(request(HttpMethod.GET, "https://127.0.0.1:5173/secret?x=1", true),
                sessions, false));
        assertEquals("unsupported_scheme", r.reason());
        assertEquals("https://127.0.0.1:5173", r.authority(), "scheme and host only, never path or query");
    }

    @Test
    void aBrokenHeadIsRefusedBeforeTheCredentialIsLookedAt() {
        HttpRequest req = request(HttpMethod.GET, "http://127.0.0.1:5173/", true);
        req.setDecoderResult(DecoderResult.failure(new IllegalArgumentException("too long")));
        RequestGate.Decision d = RequestGate.decide(req, sessions, false);
        assertNull(d.session());
        assertEquals("bad_request", refusal(d).reason());
    }
}
