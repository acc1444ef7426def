package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
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

import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The error pages in real Chromium, through a real ingress and gateway: each page (target down, gateway unreachable,
 * renewal failed) is captured as a PNG under target/error-pages/, its words are read from the DOM, and its
 * self-reload is shown: the test clears the condition (starts the target, the gateway, lets the renewal succeed) and
 * waits for the app's own text to appear in the same tab, without navigating.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ErrorPageScreenshotsTest {
    private static final Path SHOTS = Path.of("target", "error-pages");
    private static final byte[] PNG_SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    private static final Duration CLEARS = Duration.ofSeconds(60);
    private static final String APP_TEXT = "document.body && document.body.innerText.includes("
            + "\"" + SampleApp.HELLO_BODY.strip().replace("\"", "\\\"") + "\")";

    private TunnelStack stack;
    private Browser browser;
    private Page page;
    private SampleApp app;

    @BeforeEach
    void start() throws Exception {
        stack = TunnelStack.start(1);
        browser = Browser.launch(Browser.Options.proxied(stack.proxy(), stack.session().username(),
                stack.session().password()));
        page = browser.newPage();
    }

    @AfterEach
    void stop() {
        if (browser != null) {
            browser.close();
        }
        if (app != null) {
            app.close();
        }
        stack.close();
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private String text(String selector) {
        return page.evaluateString("(document.querySelector('" + selector + "') || {innerText: ''}).innerText");
    }

    /** The screenshot is a real, non-empty PNG. */
    private void capture(String name) throws Exception {
        Path png = SHOTS.resolve(name + ".png");
        page.captureScreenshot(png);
        byte[] bytes = Files.readAllBytes(png);
        assertTrue(bytes.length > 1000, name + ": " + bytes.length + " bytes");
        assertArrayEquals(PNG_SIGNATURE, Arrays.copyOf(bytes, 8), name + " is a PNG");
    }

    /** The page is the refusal it should be, offers the fix, and is set to reload itself. */
    private void assertErrorPage(String title, String happened, String fix) {
        assertTrue(page.evaluateString("document.title").contains(title), page.evaluateString("document.title"));
        assertTrue(text("#happened").contains(happened), text("#happened"));
        assertTrue(text("#fix").contains(fix), text("#fix"));
        assertTrue(text("#reload").contains("reloads by itself"), text("#reload"));
        String body = page.evaluateString("document.documentElement.outerHTML");
        for (String raw : List.of("finishConnect", "Connection refused", "Exception")) {
            assertFalse(body.contains(raw), raw + " on the page");
        }
    }

    @Test
    void targetDownThenTheDevServerStarts() throws Exception {
        int port = freePort();
        stack.grant("localhost", port);
        page.navigate("http://localhost:" + port + "/hello");
        assertErrorPage("Nothing is listening on localhost:" + port, "nothing accepted the connection",
                "Start the dev server");
        capture("target-down");
        app = SampleApp.start("127.0.0.1", port);
        page.waitFor(APP_TEXT, CLEARS);
    }

    @Test
    void gatewayUnreachableThenTheGatewayComesBack() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        stack.grant("localhost", app.port());
        page.navigate("http://localhost:" + app.port() + "/hello");
        page.waitFor(APP_TEXT, CLEARS);
        stack.stopGateway();
        page.navigate("http://localhost:" + app.port() + "/hello");
        page.waitFor("document.title.includes('gateway is unreachable')", CLEARS);
        assertErrorPage("The environment gateway is unreachable", "could not connect to the environment gateway",
                "env-gateway serve");
        capture("gateway-unreachable");
        stack.restartGatewayOnSameAddress();
        page.waitFor(APP_TEXT, CLEARS);
    }

    @Test
    void renewalFailedThenARenewalSucceeds() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        String target = "localhost:" + app.port();
        // A correctly signed grant that expired beyond the verifier's skew.
        stack.session().authorities().add(new GrantIssuer(KeyDirectory.open(stack.keysDir()).signingKey(),
                Clock.fixed(Instant.now().minus(Duration.ofMinutes(20)), ZoneOffset.UTC))
                .issueGrant(GrantSpec.tcp(TunnelStack.ENVIRONMENT, stack.session().id(), "localhost", app.port()),
                        Duration.ofMinutes(5)));
        AtomicBoolean sshUp = new AtomicBoolean(false);
        stack.ingress().grantRefresher((session, t, grantId, why) -> sshUp.get()
                ? CompletableFuture.completedFuture(stack.issueGrant("localhost", app.port(), Duration.ofMinutes(10)))
                : CompletableFuture.failedFuture(new IllegalStateException("ssh: connect: Connection refused")));
        stack.ingress().frontDoor(new RenewalFrontDoor(sshUp));
        page.navigate("http://" + target + "/hello");
        assertTrue(page.evaluateString("document.title").contains("The grant for " + target + " has expired"),
                page.evaluateString("document.title"));
        assertTrue(text("#happened").contains("could not be renewed: the SSH connection to devbox is down"),
                text("#happened"));
        assertTrue(text("#fix").contains("Check that ssh devbox works"), text("#fix"));
        assertFalse(page.evaluateString("document.documentElement.outerHTML").contains("Connection refused"));
        capture("renewal-failed");
        sshUp.set(true);
        page.waitFor(APP_TEXT, CLEARS);
    }

    /** What {@code open} would say while its SSH connection is down: a renewal problem and its fix. */
    private record RenewalFrontDoor(AtomicBoolean sshUp) implements FrontDoor {
        @Override
        public List<StatusLine> status(String sessionId) {
            return List.of(new StatusLine("SSH", sshUp.get() ? "connected" : "down", sshUp.get()));
        }

        @Override
        public CompletableFuture<List<Integer>> discoveredPorts(String sessionId) {
            return CompletableFuture.completedFuture(List.of());
        }

        @Override
        public CompletableFuture<URI> openPort(String sessionId, int port) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException());
        }

        @Override
        public String fix(TunnelError error, String authority) {
            return error == TunnelError.GRANT_EXPIRED ? "Check that ssh devbox works; grants are renewed as soon as "
                    + "it does, and this page reloads." : null;
        }

        @Override
        public String renewalProblem(String sessionId, String target) {
            return sshUp.get() ? null : "the SSH connection to devbox is down";
        }
    }
}
