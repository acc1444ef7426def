package dev.previewtunnel.spikes.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.browser.Browser;
import dev.previewtunnel.spikes.browser.Page;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.stack.TunnelStack;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.spikes.e2e.Journeys.assertNavigated;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Run 5, the loopback threat model. Everything that is not the session's own browser tries to reach the
 * preview target, and the target must see nothing:
 * <ol>
 *   <li>an unrelated page, served from another loopback port, in a browser without the session's proxy
 *       configuration, sends {@code no-cors} requests (and WebSockets) to the ingress port and to the preview
 *       authority;</li>
 *   <li>a local process without the credential: a plain socket (absolute-form GET, CONNECT, a wrong password)
 *       and {@code curl -x};</li>
 *   <li>a second browser session with its own credential asks for the first session's target.</li>
 * </ol>
 * The single-machine setup: the "environment" target listens on {@code 127.0.0.2:P} (a loopback address only
 * the gateway dials; the grant names it), while {@code 127.0.0.1:P} holds a decoy standing for "whatever the
 * desktop itself runs on port P". A direct {@code http://localhost:P} from a browser without the proxy lands on
 * the decoy, as it would land on the desktop's own loopback in a real remote setup. See docs/security-spikes.md.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@ExtendWith(SpikeReport.class)
class LoopbackThreatRunTest {

    @Test
    @SpikeRun("loopback_threat_model")
    void nothingButTheSessionsOwnBrowserReachesTheTarget(SpikeResult r) throws Exception {
        Processes.require(Browser.CHROMIUM, "apt-get install chromium");
        Processes.require("curl", "apt-get install curl");
        SampleApp target = null;
        TinyHttpServer decoy = null;
        for (int attempt = 0; decoy == null; attempt++) {
            target = SampleApp.start("127.0.0.2", 0);
            try {
                decoy = new TinyHttpServer("127.0.0.1", target.port())
                        .route("/", ex -> TinyHttpServer.send(ex, 200, "text/plain", "desktop's own port\n")).start();
            } catch (UncheckedIOException e) {
                target.close(); // 127.0.0.1:P is taken by something else: pick another P
                if (attempt == 5) {
                    throw e;
                }
            }
        }
        SampleApp secondTarget = SampleApp.start("127.0.0.1", 0);
        TinyHttpServer unrelated = new TinyHttpServer("127.0.0.1", 0)
                .route("/", ex -> TinyHttpServer.send(ex, 200, "text/html; charset=utf-8",
                        "<!doctype html><title>unrelated page</title><h1>an unrelated local page</h1>"))
                .start();
        TunnelStack stack = null;
        Browser direct = null;
        Browser second = null;
        Browser owner = null;
        try (AuditCapture audit = new AuditCapture()) {
            stack = TunnelStack.start(2);
            int p = target.port();
            stack.grant("127.0.0.2", p); // the session sees it as http://localhost:P
            int ingressPort = stack.proxy().getPort();
            r.put("target", "127.0.0.2:" + p + " (granted to session s1 as localhost:" + p + ")");
            r.put("ingressPort", ingressPort);

            // 1. An unrelated page in a browser without the session's proxy configuration.
            long phase = System.nanoTime();
            direct = Browser.launch(Browser.Options.direct());
            Page attacker = direct.newPage();
            String attackerUrl = "http://127.0.0.1:" + unrelated.port() + "/";
            assertNavigated(attacker.navigate(attackerUrl), attackerUrl);
            String ingress = "http://127.0.0.1:" + ingressPort;
            String preview = "http://localhost:" + p;
            JsonNode page = attacker.evaluate("""
                    (async () => {
                      const out = {};
                      const tryFetch = async (name, url, init) => {
                        try { await fetch(url, Object.assign({ mode: 'no-cors', cache: 'no-store' }, init || {})); out[name] = 'sent'; }
                        catch (e) { out[name] = String(e); }
                      };
                      const tryWs = (name, url) => new Promise(res => {
                        const ws = new WebSocket(url);
                        const t = setTimeout(() => { out[name] = 'timeout'; res(); }, 5000);
                        ws.onopen = () => { clearTimeout(t); out[name] = 'open'; ws.close(); res(); };
                        ws.onerror = () => { clearTimeout(t); out[name] = 'error'; res(); };
                      });
                      await tryFetch('ingressGet', '%1$s/secret');
                      await tryFetch('ingressPathWithAbsoluteUrl', '%1$s/%2$s/secret');
                      await tryFetch('ingressPostSmuggledRequest', '%1$s/', { method: 'POST',
                        body: 'GET %2$s/secret HTTP/1.1\\r\\nHost: localhost:%3$d\\r\\n\\r\\n' });
                      await tryFetch('ingressAsLocalhost', 'http://localhost:%4$d/secret');
                      await tryWs('ingressWebSocket', 'ws://127.0.0.1:%4$d/ws');
                      await tryFetch('previewAuthority', '%2$s/secret');
                      await tryWs('previewAuthorityWebSocket', 'ws://localhost:%3$d/ws');
                      return out;
                    })()
                    """.formatted(ingress, preview, p, ingressPort));
            r.put("unrelatedPageResults", page);
            r.put("unrelatedPageMs", Journeys.msSince(phase));
            // The page's requests to the preview authority were really sent: they landed on the desktop's own
            // port P (the decoy), the fetch and the WebSocket handshake. Without that, zero at the target is empty.
            assertTrue(decoy.requests() >= 2, "the page's probes of " + preview + " never left the browser: "
                    + decoy.requests() + " at the decoy, " + page);
            assertEquals(0, target.acceptedConnections(), "the unrelated page reached the target: " + page);
            assertEquals(0, target.requestsServed(), "the unrelated page reached the target: " + page);
            // Refusals without a credential are audited once per kind, repeats as a summary ("repeated": N) when
            // the kind's 10 s window ends: count what the lines account for.
            java.util.function.LongSupplier refusedNotAProxy = () -> audit.matching(n ->
                    AuditCapture.event("ingress", "request_refused").test(n)
                            && "not_a_proxy_request".equals(n.path("code").asText())).stream()
                    .mapToLong(n -> n.has("repeated") ? n.get("repeated").asLong() : 1).sum();
            Processes.await("the ingress to account for refusing the page's requests", Duration.ofSeconds(30),
                    () -> refusedNotAProxy.getAsLong() >= 4);
            long notAProxyRequest = refusedNotAProxy.getAsLong();
            assertTrue(notAProxyRequest >= 4, "expected the ingress to refuse the page's requests: " + audit.lines());
            r.put("ingressRefusedNotAProxyRequest", notAProxyRequest);
            r.put("desktopDecoyRequests", decoy.requests());

            // 2. A local process without the credential.
            phase = System.nanoTime();
            ObjectNode local = SpikeResult.JSON.createObjectNode();
            String absGet = "GET " + preview + "/secret HTTP/1.1\r\nHost: localhost:" + p + "\r\n\r\n";
            local.put("socketAbsoluteGet", statusLine(stack.proxy(), absGet));
            local.put("socketConnect", statusLine(stack.proxy(),
                    "CONNECT localhost:" + p + " HTTP/1.1\r\nHost: localhost:" + p + "\r\n\r\n"));
            String wrong = Base64.getEncoder().encodeToString((stack.session().username() + ":guess")
                    .getBytes(StandardCharsets.UTF_8));
            local.put("socketWrongPassword", statusLine(stack.proxy(), "CONNECT localhost:" + p
                    + " HTTP/1.1\r\nHost: localhost:" + p + "\r\nProxy-Authorization: Basic " + wrong + "\r\n\r\n"));
            local.put("socketOriginForm", statusLine(stack.proxy(),
                    "GET /secret HTTP/1.1\r\nHost: 127.0.0.1:" + ingressPort + "\r\n\r\n"));
            String curl = Processes.find("curl").toString();
            local.put("curlProxyGet", Processes.runOk(List.of(curl, "-s", "-o", "/dev/null", "-w", "%{http_code}",
                    "--noproxy", "", "-x", ingress, preview + "/secret"), null, Duration.ofSeconds(20)).output().trim());
            local.put("curlProxyConnect", Processes.run(List.of(curl, "-s", "-o", "/dev/null", "-w",
                    "%{http_connect}", "--noproxy", "", "-p", "-x", ingress, preview + "/secret"), null,
                    Duration.ofSeconds(20)).output().trim());
            r.put("localProcessResults", local);
            r.put("localProcessMs", Journeys.msSince(phase));
            assertTrue(local.path("socketAbsoluteGet").asText().startsWith("HTTP/1.1 407"), local.toString());
            assertTrue(local.path("socketConnect").asText().startsWith("HTTP/1.1 407"), local.toString());
            assertTrue(local.path("socketWrongPassword").asText().startsWith("HTTP/1.1 407"), local.toString());
            assertTrue(local.path("socketOriginForm").asText().startsWith("HTTP/1.1 400"), local.toString());
            assertEquals("407", local.path("curlProxyGet").asText(), local.toString());
            assertEquals("407", local.path("curlProxyConnect").asText(), local.toString());
            assertEquals(0, target.acceptedConnections(), "a process without the credential reached the target");
            assertEquals(0, target.requestsServed(), "a process without the credential reached the target");

            // 3. A second browser session, with its own credential and its own grant, asks for s1's target.
            phase = System.nanoTime();
            BrowserSession s2 = stack.addSession("s2");
            stack.grant(s2, "localhost", secondTarget.port());
            second = Browser.launch(Browser.Options.proxied(stack.proxy(), s2.username(), s2.password()));
            Page other = second.newPage();
            String own = "http://localhost:" + secondTarget.port() + "/hello";
            assertNavigated(other.navigate(own), own);
            assertEquals(SampleApp.HELLO_BODY.trim(), other.evaluateString("document.body.innerText").trim());
            assertNavigated(other.navigate(preview + "/secret"), preview);
            String refusal = other.evaluateString("document.body.innerText");
            assertTrue(refusal.contains("not_granted"), refusal);
            JsonNode fromS2 = other.evaluate("""
                    (async () => {
                      const out = {};
                      try { await fetch('%1$s/secret', { mode: 'no-cors' }); out.noCorsFetch = 'sent'; } catch (e) { out.noCorsFetch = String(e); }
                      out.webSocket = await new Promise(res => {
                        const ws = new WebSocket('ws://localhost:%2$d/ws');
                        const t = setTimeout(() => res('timeout'), 5000);
                        ws.onopen = () => { clearTimeout(t); ws.close(); res('open'); };
                        ws.onerror = () => { clearTimeout(t); res('error'); };
                      });
                      return out;
                    })()
                    """.formatted(preview, p));
            assertEquals("error", fromS2.path("webSocket").asText(), fromS2.toString());
            String s2Connect = statusLine(stack.proxy(), "CONNECT localhost:" + p + " HTTP/1.1\r\nHost: localhost:" + p
                    + "\r\nProxy-Authorization: Basic " + Base64.getEncoder().encodeToString(
                    (s2.username() + ":" + s2.password()).getBytes(StandardCharsets.UTF_8)) + "\r\n\r\n");
            assertTrue(s2Connect.startsWith("HTTP/1.1 403"), s2Connect);
            long notGranted = audit.matching(n -> AuditCapture.event("ingress", "request_refused").test(n)
                    && "s2".equals(n.path("session").asText()) && "not_granted".equals(n.path("code").asText())).size();
            assertTrue(notGranted >= 3, audit.lines().toString());
            assertEquals(0, target.acceptedConnections(), "session s2 reached session s1's target");
            assertEquals(0, target.requestsServed(), "session s2 reached session s1's target");
            r.put("secondSession", SpikeResult.JSON.createObjectNode()
                    .put("ownTargetReached", true)
                    .put("navigationPage", refusal.lines().findFirst().orElse(""))
                    .put("connectWithOwnCredential", s2Connect)
                    .put("refusedNotGranted", notGranted)
                    .set("fromPage", fromS2));
            r.put("secondSessionMs", Journeys.msSince(phase));
            r.put("targetConnectionsBeforePositiveControl", target.acceptedConnections());
            r.put("targetRequestsBeforePositiveControl", target.requestsServed());

            // Positive control: the session's own browser does reach it, so the zeros above mean something.
            owner = Browser.launch(Browser.Options.proxied(stack.proxy(), stack.session().username(),
                    stack.session().password()));
            Page mine = owner.newPage();
            assertNavigated(mine.navigate(preview + "/hello"), preview);
            assertEquals(SampleApp.HELLO_BODY.trim(), mine.evaluateString("document.body.innerText").trim());
            // At least one: the count is not fixed, as Chromium may fetch /favicon.ico on its own schedule.
            assertTrue(target.acceptedConnections() >= 1, "the session's own browser did not reach the target");
            assertTrue(target.requestsServed() >= 1, "the session's own browser got no response from the target");
            r.put("positiveControlTargetConnections", target.acceptedConnections());
            r.put("positiveControlTargetRequests", target.requestsServed());
        } finally {
            Closer.closeAll(owner, second, direct, stack, unrelated, secondTarget, decoy, target);
        }
    }

    /** Sends raw bytes to the proxy port and returns the first response line. */
    static String statusLine(InetSocketAddress proxy, String request) {
        try (Socket s = new Socket()) {
            s.connect(proxy, 5000);
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = s.getInputStream();
            StringBuilder line = new StringBuilder();
            int c;
            while ((c = in.read()) != -1 && c != '\n') {
                if (c != '\r') {
                    line.append((char) c);
                }
            }
            return line.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
