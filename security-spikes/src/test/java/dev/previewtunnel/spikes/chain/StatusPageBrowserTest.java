package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.ingress.status.FrontDoor;
import dev.previewtunnel.ingress.status.StatusLine;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.browser.Browser;
import dev.previewtunnel.spikes.browser.Page;
import dev.previewtunnel.spikes.stack.TunnelStack;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The status page {@code http://preview.localhost/} in real Chromium through the ingress: it lists the session's
 * preview and the front door's lines, and its "Open" button (a form POST that Chromium sends with
 * {@code Origin: http://preview.localhost}) opens a discovered port and lands on the app. Captured as a PNG.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StatusPageBrowserTest {
    private TunnelStack stack;
    private Browser browser;
    private SampleApp granted;
    private SampleApp discovered;
    private final List<Integer> opened = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws Exception {
        granted = SampleApp.start("127.0.0.1", 0);
        discovered = SampleApp.start("127.0.0.1", 0);
        stack = TunnelStack.start(1);
        stack.grant("localhost", granted.port());
        browser = Browser.launch(Browser.Options.proxied(stack.proxy(), stack.session().username(),
                stack.session().password()));
    }

    @AfterEach
    void stop() {
        browser.close();
        stack.close();
        granted.close();
        discovered.close();
    }

    /** Finds {@code discovered}'s port until it is opened; opening grants it, as {@code open} would. */
    private FrontDoor frontDoor() {
        return new FrontDoor() {
            @Override
            public List<StatusLine> status(String sessionId) {
                return List.of(new StatusLine("SSH", "connected to devbox", true));
            }

            @Override
            public CompletableFuture<List<Integer>> discoveredPorts(String sessionId) {
                return CompletableFuture.completedFuture(opened.isEmpty() ? List.of(discovered.port()) : List.of());
            }

            @Override
            public CompletableFuture<URI> openPort(String sessionId, int port) {
                opened.add(port);
                stack.grant("localhost", port);
                return CompletableFuture.completedFuture(URI.create("http://localhost:" + port + "/hello"));
            }

            @Override
            public String fix(TunnelError error, String authority) {
                return null;
            }

            @Override
            public String renewalProblem(String sessionId, String target) {
                return null;
            }
        };
    }

    @Test
    void theStatusPageListsThePreviewAndItsOpenButtonOpensADiscoveredPort() throws Exception {
        stack.ingress().frontDoor(frontDoor());
        Page page = browser.newPage();
        page.navigate("http://preview.localhost/");
        String text = page.evaluateString("document.body.innerText");
        assertTrue(text.contains("http://localhost:" + granted.port() + "/"), text);
        assertTrue(text.contains("connected to devbox"), text);
        assertTrue(text.contains("127.0.0.1:" + discovered.port()), text);
        assertFalse(text.contains(stack.session().password()), "no credential on the page");
        Path png = Path.of("target", "error-pages", "status-page.png");
        page.captureScreenshot(png);
        assertTrue(Files.size(png) > 1000, png.toString());

        page.evaluate("document.querySelector('#ports button').click()");
        page.waitFor("location.href === 'http://localhost:" + discovered.port() + "/hello' && document.body"
                + " && document.body.innerText.includes('" + SampleApp.HELLO_BODY.strip() + "')",
                Duration.ofSeconds(30));
        assertEquals(List.of(discovered.port()), opened);
    }
}
