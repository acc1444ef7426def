package dev.previewtunnel.spikes.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.browser.Browser;
import dev.previewtunnel.spikes.browser.Page;
import dev.previewtunnel.spikes.browser.Processes;
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
        try {
            String base = "http://localhost:" + app.port();
            String token = UUID.randomUUID().toString().replace("-", "");
            // Login-like: the app answers with a relative redirect to the page that sets the session cookie.
            String login = base + "/redirect?to=" + enc("/cookie/set?session=" + token);
            assertNavigated(page.navigate(login), login);
            assertEquals(base + "/cookie/set?session=" + token, page.evaluateString("location.href"));
            assertTrue(page.evaluateString("document.body.innerText").contains("cookie set"));
            // HttpOnly: the page's JavaScript does not see it, the browser keeps it for the origin.
            assertFalse(page.evaluateString("document.cookie").contains(token), "HttpOnly cookie visible to JS");

            // Absolute redirect to the same authority: the cookie is sent on the next request.
            String absolute = base + "/redirect?to=" + enc(base + "/cookie/get");
            assertNavigated(page.navigate(absolute), absolute);
            assertEquals(base + "/cookie/get", page.evaluateString("location.href"));
            String shown = page.evaluateString("document.body.innerText");
            assertTrue(shown.contains("session=" + token), "cookie not sent back: " + shown);

            // The same from page JavaScript: fetch follows a redirect and sends the cookie.
            JsonNode viaFetch = page.evaluate("fetch('/redirect?to=%2Fcookie%2Fget').then(async r =>"
                    + " ({redirected: r.redirected, url: r.url, status: r.status, body: await r.text()}))");
            assertTrue(viaFetch.path("redirected").asBoolean(), viaFetch.toString());
            assertEquals(base + "/cookie/get", viaFetch.path("url").asText());
            assertTrue(viaFetch.path("body").asText().contains("session=" + token), viaFetch.toString());
            r.put("relativeRedirect", true);
            r.put("absoluteSameAuthorityRedirect", true);
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
            // https: Chromium asks the proxy for CONNECT example.invalid:443; not granted → 403, nothing dialed.
            String httpsEscape = base + "/redirect?to=" + enc("https://example.invalid/cb?code=42");
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
            String httpEscape = base + "/redirect?to=" + enc("http://example.invalid/cb?code=42");
            assertNavigated(page.navigate(httpEscape), httpEscape);
            String text = page.evaluateString("document.body.innerText");
            assertTrue(text.contains("not granted") && text.contains("not_granted"), text);
            Processes.await("the ingress to audit the refused GET", WAIT, () -> !audit.matching(n ->
                    "example.invalid:80".equals(n.path("authority").asText())).isEmpty());

            // Nothing reached the gateway for that host, and the audit file has the same lines.
            assertTrue(audit.matching(n -> "gateway".equals(n.path("side").asText())
                    && n.toString().contains("example.invalid")).isEmpty(), audit.lines().toString());
            Path auditFile = ViteDevServer.moduleDir().resolve("target/audit-test.jsonl");
            Processes.await("target/audit-test.jsonl to contain the refusal", WAIT, () -> {
                try {
                    return Files.exists(auditFile) && Files.readString(auditFile).contains("example.invalid:443");
                } catch (java.io.IOException e) {
                    return false;
                }
            });
            // Everything the ingress audited about the external host (refusals, and a redirect note if it keeps one).
            r.put("ingressAuditForExternalHost", audit.matching(n -> "ingress".equals(n.path("side").asText())
                    && n.toString().contains("example.invalid")).stream()
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

    static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

}
