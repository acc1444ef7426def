package dev.previewtunnel.spikes.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.browser.Browser;
import dev.previewtunnel.spikes.browser.Page;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.stack.TunnelStack;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.spikes.e2e.Journeys.WAIT;
import static dev.previewtunnel.spikes.e2e.Journeys.assertNavigated;
import static dev.previewtunnel.spikes.e2e.Journeys.js;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs 1, 2, 3 and 6: one real Chromium whose proxy is the ingress (with the session's credential answered
 * through DevTools), the real Vite dev server, the sample app and a streaming app, all reached at their own
 * {@code localhost:PORT} origins through ingress → tunnel → gateway.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@ExtendWith(SpikeReport.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class BrowserJourneyTest {
    static JourneyFixture f;
    static SampleApp app;
    static ViteDevServer vite;
    static TunnelStack stack;
    static Browser browser;

    @BeforeAll
    static void start() throws Exception {
        f = JourneyFixture.start();
        app = f.app;
        vite = f.vite;
        stack = f.stack;
        browser = f.browser();
    }

    @AfterAll
    static void stop() {
        if (f != null) {
            f.close();
        }
    }

    @Test
    @Order(1)
    @SpikeRun("vite_hmr")
    void viteHmrThroughTheTunnel(SpikeResult r) {
        Page page = browser.newPage();
        try {
            Journeys.viteHmr(page, vite, r, stack.proxy().getPort());
        } finally {
            page.close();
        }
    }

    @Test
    @Order(2)
    @SpikeRun("app_websocket_eventsource")
    void applicationWebSocketAndEventSource(SpikeResult r) {
        Page page = browser.newPage();
        try {
            Journeys.appStreaming(page, f.streaming, app, r, stack.proxy().getPort(), f.directBrowser());
        } finally {
            page.close();
        }
    }

    @Test
    @Order(3)
    @SpikeRun("cookies_redirects_sourcemaps")
    void cookiesRedirectsAndSourceMaps(SpikeResult r) {
        Page page = browser.newPage();
        try (AuditCapture audit = new AuditCapture()) {
            String base = "http://localhost:" + app.port();
            String next = base + "/cookie/get";
            // The usual login shape: the 302 itself carries Set-Cookie, with a relative Location.
            String first = UUID.randomUUID().toString().replace("-", "");
            String login = base + "/login?to=" + enc("/cookie/get") + "&session=" + first;
            assertNavigated(page.navigate(login), login);
            assertEquals(next, page.evaluateString("location.href"));
            String shown = page.evaluateString("document.body.innerText").trim();
            assertTrue(shown.contains("session=" + first), "cookie from the relative redirect not sent: " + shown);
            // HttpOnly: the page's JavaScript does not see it, the browser keeps it for the origin.
            assertFalse(page.evaluateString("document.cookie").contains(first), "HttpOnly cookie visible to JS");

            // The same with an absolute Location to the same authority: the redirect's new cookie replaces the first.
            String second = UUID.randomUUID().toString().replace("-", "");
            String absoluteLogin = base + "/login/absolute?to=" + enc("/cookie/get") + "&session=" + second;
            assertNavigated(page.navigate(absoluteLogin), absoluteLogin);
            assertEquals(next, page.evaluateString("location.href"));
            String shownAfterAbsolute = page.evaluateString("document.body.innerText").trim();
            assertTrue(shownAfterAbsolute.contains("session=" + second),
                    "cookie from the absolute same-authority redirect not sent: " + shownAfterAbsolute);
            assertFalse(shownAfterAbsolute.contains(first), "the second login's cookie did not replace the first");

            // A plain relative redirect followed by fetch from page JavaScript sends the cookie too.
            JsonNode viaFetch = page.evaluate("fetch('/redirect?to=%2Fcookie%2Fget').then(async r =>"
                    + " ({redirected: r.redirected, url: r.url, status: r.status, body: await r.text()}))");
            assertTrue(viaFetch.path("redirected").asBoolean(), viaFetch.toString());
            assertEquals(next, viaFetch.path("url").asText());
            assertTrue(viaFetch.path("body").asText().contains("session=" + second), viaFetch.toString());
            // Same authority is granted: the ingress has nothing to note about these redirects.
            assertTrue(audit.matching(AuditCapture.event("ingress", "redirect_not_granted")).isEmpty(),
                    audit.lines().toString());
            r.put("loginRelativeRedirectCookieSent", true);
            r.put("loginAbsoluteSameAuthorityRedirectCookieSent", true);
            r.put("cookieHttpOnlyKept", true);
            r.put("fetchRedirect", viaFetch.path("status").asInt());

            // Source maps: Vite serves every transformed module with an inline source map; read it through the
            // tunnel, and check what DevTools itself was told (Debugger.scriptParsed sourceMapURL).
            page.enableDebugger();
            String viteUrl = "http://localhost:" + vite.port() + "/";
            assertNavigated(page.navigate(viteUrl), viteUrl);
            page.waitFor("document.getElementById('value').textContent.length > 0", WAIT);
            JsonNode map = page.evaluate("""
                    (async () => {
                      const r = await fetch('/src/value.js');
                      const code = await r.text();
                      const m = code.match(/\\/\\/# sourceMappingURL=(\\S+)\\s*$/);
                      if (!m) { return { found: false }; }
                      const mapUrl = m[1];
                      const text = await (await fetch(mapUrl.startsWith('data:') ? mapUrl : new URL(mapUrl, r.url))).text();
                      const json = JSON.parse(text);
                      return { found: true, inline: mapUrl.startsWith('data:'), version: json.version,
                               sources: json.sources, mappingsLength: json.mappings.length,
                               originalSourceIncluded: (json.sourcesContent || []).some(s => s.includes('export const VALUE')) };
                    })()
                    """);
            assertTrue(map.path("found").asBoolean(), "no sourceMappingURL in /src/value.js: " + map);
            assertEquals(3, map.path("version").asInt(), map.toString());
            assertTrue(map.path("mappingsLength").asInt() > 0, map.toString());
            assertTrue(map.path("originalSourceIncluded").asBoolean(), map.toString());
            Processes.await("DevTools to parse /src/value.js", WAIT, () -> page.scripts().stream()
                    .anyMatch(s -> s.path("url").asText().contains("/src/value.js")));
            List<JsonNode> withMaps = page.scripts().stream()
                    .filter(s -> s.path("url").asText().startsWith(viteUrl))
                    .filter(s -> !s.path("sourceMapURL").asText().isEmpty()).toList();
            assertTrue(withMaps.stream().anyMatch(s -> s.path("url").asText().contains("/src/value.js")),
                    "DevTools saw no source map for value.js");
            r.put("httpResponsesViaIngress", Journeys.assertViaProxy(page, base + "/", stack.proxy().getPort())
                    + Journeys.assertViaProxy(page, viteUrl, stack.proxy().getPort()));
            r.put("sourceMap", map);
            r.put("scriptsWithSourceMapsInDevTools", withMaps.size());
        } finally {
            page.close();
        }
    }

    @Test
    @Order(4)
    @SpikeRun("absolute_redirect_escape")
    void absoluteRedirectToAnExternalHostIsRefusedAndAudited(SpikeResult r) throws Exception {
        Page page = browser.newPage();
        try (AuditCapture audit = new AuditCapture()) {
            String base = "http://localhost:" + app.port();
            // The callback's code stands for what an OAuth redirect carries: it must not reach the audit.
            String code = "code" + UUID.randomUUID().toString().replace("-", "");
            // https: Chromium asks the proxy for CONNECT example.invalid:443; not granted → 403, nothing dialed.
            String httpsEscape = base + "/redirect?to=" + enc("https://example.invalid/cb?code=" + code);
            JsonNode nav = page.navigate(httpsEscape);
            String errorText = nav.path("errorText").asText();
            assertEquals("net::ERR_TUNNEL_CONNECTION_FAILED", errorText, nav.toString());
            Processes.await("the ingress to audit the refused CONNECT", WAIT, () -> !audit.matching(n ->
                    AuditCapture.event("ingress", "request_refused").test(n)
                            && "example.invalid:443".equals(n.path("authority").asText())).isEmpty());
            JsonNode refusedTls = audit.matching(n -> "example.invalid:443".equals(n.path("authority").asText()))
                    .get(0);
            assertEquals("not_granted", refusedTls.path("code").asText(), refusedTls.toString());
            assertEquals(stack.session().id(), refusedTls.path("session").asText());

            // http: an absolute-form GET for the external host; the browser shows the ingress's readable page.
            String httpEscape = base + "/redirect?to=" + enc("http://example.invalid/cb?code=" + code);
            assertNavigated(page.navigate(httpEscape), httpEscape);
            String text = page.evaluateString("document.body.innerText");
            assertTrue(text.contains("not granted") && text.contains("not_granted"), text);
            Processes.await("the ingress to audit the refused GET", WAIT, () -> !audit.matching(n ->
                    "example.invalid:80".equals(n.path("authority").asText())).isEmpty());

            // The 302 itself, as it passed the ingress: one redirect_not_granted line per scheme.
            List<JsonNode> redirects = new ArrayList<>();
            for (String to : List.of("https://example.invalid:443", "http://example.invalid:80")) {
                JsonNode entry = assertOneRedirectAudited(audit, to, "localhost:" + app.port());
                assertNoSecretIn(entry, code);
                redirects.add(((ObjectNode) entry.deepCopy()).without("ts"));
            }
            assertEquals(2, audit.matching(AuditCapture.event("ingress", "redirect_not_granted")).size(),
                    audit.lines().toString());

            // Nothing reached the gateway for that host, and the audit file has the same lines.
            assertTrue(audit.matching(n -> "gateway".equals(n.path("side").asText())
                    && n.toString().contains("example.invalid")).isEmpty(), audit.lines().toString());
            Path auditFile = ViteDevServer.moduleDir().resolve("target/audit-test.jsonl");
            Processes.await("target/audit-test.jsonl to contain the refusal and the redirect note", WAIT, () -> {
                try {
                    String file = Files.exists(auditFile) ? Files.readString(auditFile) : "";
                    return file.contains("example.invalid:443") && file.contains("\"redirect_not_granted\"");
                } catch (java.io.IOException e) {
                    return false;
                }
            });
            r.put("redirectNotGrantedAudit", redirects);
            // Everything else the ingress audited about the external host (the refusals of the browser's follow-up).
            List<JsonNode> refusals = audit.matching(n -> AuditCapture.event("ingress", "request_refused").test(n)
                    && n.path("authority").asText().startsWith("example.invalid:"));
            refusals.forEach(n -> assertNoSecretIn(n, code));
            r.put("ingressRefusalsForExternalHost", refusals.stream()
                    .map(n -> ((ObjectNode) n.deepCopy()).without("ts"))
                    .toList());
            r.put("httpsRedirectBrowserError", errorText);
            r.put("httpRedirectPageTitle", page.evaluateString("document.title"));
            r.put("policy", "deny (hosts without a grant are refused with 403 not_granted; nothing is dialed)");
            r.put("auditFile", "target/audit-test.jsonl");
        } finally {
            page.close();
        }
    }

    /** Exactly one ingress {@code redirect_not_granted} line for {@code to}, with what the docs say it carries. */
    private static JsonNode assertOneRedirectAudited(AuditCapture audit, String to, String from) {
        List<JsonNode> entries = audit.matching(n -> AuditCapture.event("ingress", "redirect_not_granted").test(n)
                && to.equals(n.path("to").asText()));
        assertEquals(1, entries.size(), "redirect_not_granted lines for " + to + ": " + audit.lines());
        JsonNode e = entries.get(0);
        assertEquals(302, e.path("status").asInt(), e.toString());
        assertEquals("deny", e.path("policy").asText(), e.toString());
        assertEquals(stack.session().id(), e.path("session").asText(), e.toString());
        assertEquals(from, e.path("from").asText(), e.toString());
        return e;
    }

    /**
     * No secret in an audit line: the callback's code (the redirect's query), the session's password and its
     * Basic credential, the API token, the grants. The message names the kind of secret, never the secret.
     */
    private static void assertNoSecretIn(JsonNode entry, String callbackCode) {
        String line = entry.toString();
        String basic = Base64.getEncoder().encodeToString((stack.session().username() + ":"
                + stack.session().password()).getBytes(StandardCharsets.UTF_8));
        assertFalse(line.contains(callbackCode) || line.contains("/cb"), "the redirect's path or query was logged");
        assertFalse(line.contains(stack.session().password()), "the session password was logged");
        assertFalse(line.contains(basic), "the session's Basic credential was logged");
        assertFalse(line.contains(stack.token()), "the API token was logged");
        for (String grant : f.grants) {
            assertFalse(line.contains(grant), "a grant was logged");
        }
    }

    static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

}
