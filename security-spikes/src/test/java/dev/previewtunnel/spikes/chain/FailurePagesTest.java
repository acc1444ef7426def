package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shape of the pages a browser gets when the ingress cannot carry a request, read off the wire: small
 * HTML for a navigation (a request that accepts text/html), one short line of text for a subresource, and in
 * both the machine-readable {@code ptun-error} header, {@code Connection: close}, an exact
 * {@code Content-Length}, {@code Cache-Control: no-store}, and no more than a few kilobytes; a page for a condition
 * that can clear reloads itself.
 */
class FailurePagesTest {
    /** What Chromium sends for a navigation, and for a script/fetch/image subresource. */
    static final String NAVIGATION = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";
    static final String SUBRESOURCE = "*/*";
    static final int MAX_HTML = 4 * 1024;
    static final int MAX_TEXT = 512;

    static SampleApp app;
    static SampleApp notGranted;
    static TunnelStack stack;
    static int closedPort;

    @BeforeAll
    static void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        notGranted = SampleApp.start("127.0.0.1", 0);
        stack = TunnelStack.start(1);
        stack.grant("localhost", app.port());
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        stack.grant("localhost", closedPort);
    }

    @AfterAll
    static void stop() {
        stack.close();
        app.close();
        notGranted.close();
    }

    private static RawAnswer get(int port, String accept, boolean withCredential) throws Exception {
        String head = "GET http://localhost:" + port + "/page HTTP/1.1\r\nHost: localhost:" + port + "\r\nAccept: "
                + accept;
        return RawAnswer.parse(withCredential ? ProxyClients.rawExchange(stack.proxy(), stack.session(), head)
                : ProxyClients.rawExchange(stack.proxy(), head));
    }

    /** Headers every failure page carries, whatever its form. */
    private static void assertCommonHeaders(RawAnswer r, int status, String code) {
        assertEquals(status, r.status(), r.toString());
        assertEquals(code, r.header("ptun-error"), r.toString());
        assertEquals("close", r.header("connection"), r.toString());
        assertEquals("no-store", r.header("cache-control"), r.toString());
        assertEquals(String.valueOf(r.bodyBytes()), r.header("content-length"), r.toString());
    }

    /** {@code reloads}: the page reloads itself when its condition clears (a script allowed by hash, a fallback). */
    private static void assertHtmlPage(RawAnswer r, int status, String code, String title, boolean reloads) {
        assertCommonHeaders(r, status, code);
        assertEquals("text/html; charset=utf-8", r.header("content-type"));
        assertTrue(r.bodyBytes() < MAX_HTML, r.bodyBytes() + " bytes");
        assertTrue(r.body().startsWith("<!doctype html>"), r.body());
        assertTrue(r.body().contains("<title>" + title + "</title>"), r.body());
        assertTrue(r.body().contains("<h1>" + title + "</h1>"), r.body());
        assertTrue(r.body().contains("<code>" + code + "</code>"), r.body());
        assertTrue(r.body().contains("<h2>What to do</h2>") || !reloads, r.body());
        assertEquals(reloads, r.body().contains("<script>"), r.body());
        assertEquals(reloads, r.body().contains("<noscript><meta http-equiv=\"refresh\""), r.body());
        assertTrue(r.header("content-security-policy").startsWith("default-src 'none'"), r.toString());
    }

    private static void assertTextLine(RawAnswer r, int status, String code, String title) {
        assertCommonHeaders(r, status, code);
        assertEquals("text/plain; charset=utf-8", r.header("content-type"));
        assertTrue(r.bodyBytes() < MAX_TEXT, r.bodyBytes() + " bytes");
        assertTrue(r.body().startsWith(title + ": "), r.body());
        assertTrue(r.body().endsWith(" [" + code + "]\n"), r.body());
        assertEquals(1, r.body().lines().count(), "one line: " + r.body());
    }

    @Test
    void notGranted403() throws Exception {
        String title = "localhost:" + notGranted.port() + " is not granted to this browser session";
        RawAnswer page = get(notGranted.port(), NAVIGATION, true);
        assertHtmlPage(page, 403, "not_granted", title, false);
        System.out.printf("{\"test\":\"failure_pages\",\"code\":\"not_granted\",\"htmlBytes\":%d,\"textBytes\":%d}%n",
                page.bodyBytes(), get(notGranted.port(), SUBRESOURCE, true).bodyBytes());
        assertTextLine(get(notGranted.port(), SUBRESOURCE, true), 403, "not_granted", title);
        assertTextLine(get(notGranted.port(), "image/avif,image/webp,*/*", true), 403, "not_granted", title);
        assertEquals(0, notGranted.acceptedConnections());
    }

    @Test
    void targetRefused502() throws Exception {
        String title = "Nothing is listening on localhost:" + closedPort + " in the environment";
        assertHtmlPage(get(closedPort, NAVIGATION, true), 502, "target_refused", title, true);
        assertTextLine(get(closedPort, SUBRESOURCE, true), 502, "target_refused", title);
    }

    @Test
    void proxyAuthRequired407() throws Exception {
        String title = "Proxy authentication required";
        RawAnswer page = get(app.port(), NAVIGATION, false);
        assertHtmlPage(page, 407, "proxy_auth_required", title, false);
        assertTrue(page.header("proxy-authenticate").startsWith("Basic realm="), page.toString());
        RawAnswer text = get(app.port(), SUBRESOURCE, false);
        assertTextLine(text, 407, "proxy_auth_required", title);
        assertTrue(text.header("proxy-authenticate").startsWith("Basic realm="), text.toString());
        assertEquals(0, app.acceptedConnections());
    }
}
