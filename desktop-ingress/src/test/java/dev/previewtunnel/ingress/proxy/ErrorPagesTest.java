package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelError;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.FullHttpResponse;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The pages' words, fixes and self-reload, as plain objects; and that a raw cause's text never reaches one. */
class ErrorPagesTest {
    private static String body(FullHttpResponse r) {
        try {
            return r.content().toString(StandardCharsets.UTF_8);
        } finally {
            r.release();
        }
    }

    /** The page when a renewal may come (a refresher or a front door is set). */
    private static String html(TunnelError error) {
        return html(error, true);
    }

    private static String html(TunnelError error, boolean renewals) {
        return body(ErrorPages.forError(UnpooledByteBufAllocator.DEFAULT, error, "localhost:5173", null, null,
                renewals, true));
    }

    @Test
    void everyTunnelErrorSaysWhatHappenedAndWhatToDoInItsOwnWords() {
        for (TunnelError error : TunnelError.values()) {
            String page = html(error);
            String happened = ErrorPages.escape(ErrorWords.happened(error));
            assertTrue(page.contains("<p id=\"happened\">" + happened + "</p>"), error + ": " + page);
            assertTrue(page.contains("<p id=\"fix\" class=\"fix\">"), error + ": " + page);
            assertTrue(page.contains("<code>" + error.code() + "</code>"), error + ": " + page);
            assertTrue(page.length() < 4096, error + ": " + page.length() + " characters");
        }
        assertTrue(html(TunnelError.TARGET_REFUSED).contains("Start the dev server"));
        assertTrue(html(TunnelError.GATEWAY_UNREACHABLE).contains("env-gateway serve"));
        assertTrue(html(TunnelError.GRANT_EXPIRED).contains("--grant-refresh-command"));
    }

    @Test
    void clearableErrorsReloadThemselvesAndBadRequestsDoNot() {
        for (TunnelError error : new TunnelError[] {TunnelError.TARGET_REFUSED, TunnelError.GATEWAY_UNREACHABLE,
                TunnelError.GATEWAY_TIMEOUT, TunnelError.SHUTTING_DOWN, TunnelError.GRANT_EXPIRED,
                TunnelError.GRANT_REVOKED, TunnelError.TOO_MANY_STREAMS}) {
            String page = html(error);
            assertTrue(page.contains("<script>" + SelfReload.SCRIPT + "</script>"), error + ": " + page);
            assertTrue(page.contains("<noscript><meta http-equiv=\"refresh\" content=\"10\"></noscript>"), page);
        }
        for (TunnelError error : new TunnelError[] {TunnelError.BAD_REQUEST, TunnelError.GRANT_REFUSED,
                TunnelError.POLICY_REFUSED, TunnelError.NOT_GRANTED}) {
            String page = html(error);
            assertFalse(page.contains("<script"), error + ": " + page);
            assertFalse(page.contains("http-equiv=\"refresh\""), error + ": " + page);
        }
        // Without a refresher or a front door no renewal comes: an expired grant's page does not poll.
        assertTrue(html(TunnelError.TARGET_REFUSED, false).contains("<script>"));
        assertFalse(html(TunnelError.GRANT_EXPIRED, false).contains("<script"));
        assertFalse(html(TunnelError.GRANT_REVOKED, false).contains("<script"));
        String auth = body(Refusal.proxyAuthRequired().page(UnpooledByteBufAllocator.DEFAULT, true));
        assertFalse(auth.contains("<script"), auth);
    }

    @Test
    void theScriptRefetchesUncachedWithBackoffAndReloadsWhenTheErrorHeaderIsGone() {
        assertTrue(SelfReload.SCRIPT.contains("fetch(location.href,{cache:\"no-store\""), SelfReload.SCRIPT);
        assertTrue(SelfReload.SCRIPT.contains("var d=1000") && SelfReload.SCRIPT.contains("Math.min(d*2,10000)"));
        assertTrue(SelfReload.SCRIPT.contains("r.headers.has(\"ptun-error\")"), SelfReload.SCRIPT);
        FullHttpResponse r = ErrorPages.forError(UnpooledByteBufAllocator.DEFAULT, TunnelError.TARGET_REFUSED,
                "localhost:5173", null, null, true, true);
        String policy = r.headers().get("content-security-policy");
        r.release();
        // Only this script (by its hash) may run, and it may fetch only this origin.
        assertTrue(policy.contains("script-src '" + SelfReload.sha256(SelfReload.SCRIPT) + "'"), policy);
        assertTrue(policy.contains("connect-src 'self'") && policy.startsWith("default-src 'none'"), policy);
        assertFalse(policy.contains("unsafe-inline"), policy);
    }

    @Test
    void textAnswersStayOneShortLine() {
        String text = body(ErrorPages.forError(UnpooledByteBufAllocator.DEFAULT, TunnelError.TARGET_REFUSED,
                "localhost:5173", null, null, true, false));
        assertTrue(text.startsWith("Nothing is listening on localhost:5173 in the environment: "), text);
        assertTrue(text.endsWith(" [target_refused]\n") && text.lines().count() == 1, text);
        assertFalse(text.contains("What to do") || text.contains("<"), text);
    }

    @Test
    void aFixFromTheFrontDoorIsEscaped() {
        String page = body(ErrorPages.forError(UnpooledByteBufAllocator.DEFAULT, TunnelError.TARGET_REFUSED,
                "localhost:5173", null, "Run <b>vite</b> & \"reload\"", true, true));
        assertTrue(page.contains("Run &lt;b&gt;vite&lt;/b&gt; &amp; &quot;reload&quot;"), page);
    }

    /**
     * An open that fails with a plain exception (here the pool's own complaint about a foreign caller loop; in life a
     * connect failure such as {@code finishConnect(..) failed}) is refused in words: its text is for the log.
     */
    @Test
    void aRawCausesTextNeverReachesThePage() throws Exception {
        EventLoopGroup group = Transports.best().newGroup(1, "error-pages-test");
        IngressConfig config = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create("ws://127.0.0.1:1/"));
        TunnelPool pool = new TunnelPool(new TunnelClient(group, Transports.best().socketChannel(),
                MuxSettings.defaults()), config.gateway(), () -> "unused", null, 1, config.connectTimeout());
        pool.start();
        EmbeddedChannel browser = new EmbeddedChannel();
        try {
            IngressContext context = new IngressContext(config, new SessionRegistry(), pool, new AuditLog("ingress"));
            Authority target = new Authority("127.0.0.1", 5173);
            AtomicReference<StreamOpener.Outcome> outcome = new AtomicReference<>();
            new StreamOpener(context, browser, BrowserSession.create("s"), new Route(target, target, "g", "jti", "e"),
                    "http").open(() -> true, outcome::set);
            browser.runPendingTasks();
            Refusal refusal = assertInstanceOf(StreamOpener.Refused.class, outcome.get()).refusal();
            assertEquals(TunnelError.GATEWAY_UNREACHABLE, refusal.error());
            assertNull(refusal.detail(), "no words of the ingress: the error's generic words");
            String page = body(refusal.page(UnpooledByteBufAllocator.DEFAULT, true));
            assertNotNull(page);
            assertFalse(page.contains("event loop"), page);
            assertTrue(page.contains(ErrorPages.escape(ErrorWords.happened(TunnelError.GATEWAY_UNREACHABLE))), page);
        } finally {
            browser.finishAndReleaseAll();
            pool.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
