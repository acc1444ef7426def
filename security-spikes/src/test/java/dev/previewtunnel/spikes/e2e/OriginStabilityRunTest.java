package dev.previewtunnel.spikes.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.browser.Browser;
import dev.previewtunnel.spikes.browser.Page;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.stack.TunnelStack;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.spikes.e2e.Journeys.assertNavigated;
import static dev.previewtunnel.spikes.e2e.Journeys.js;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Run 4: the origin does not depend on the ingress's port. localStorage written at {@code http://localhost:P}
 * survives an ingress restart on another port (same session credential and grants; the browser restarted with
 * the new proxy port and the same profile). The opposite control: another port is another origin, with empty
 * storage, which is what a port-per-grant listener design would have done to the app on every restart.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@ExtendWith(SpikeReport.class)
class OriginStabilityRunTest {

    @Test
    @SpikeRun("origin_stability")
    void localStorageSurvivesAnIngressRestartOnAnotherPort(SpikeResult r) throws Exception {
        Processes.require(Browser.CHROMIUM, "apt-get install chromium");
        SampleApp app = SampleApp.start("127.0.0.1", 0);
        SampleApp other = SampleApp.start("127.0.0.1", 0);
        TunnelStack stack = null;
        Browser browser = null;
        Path profile = Files.createTempDirectory("ptun-profile");
        try {
            stack = TunnelStack.start(2);
            stack.grant("localhost", app.port());
            stack.grant("localhost", other.port());
            String origin = "http://localhost:" + app.port();
            String otherOrigin = "http://localhost:" + other.port();
            String value = "sticky-" + UUID.randomUUID();
            int firstIngressPort = stack.proxy().getPort();

            browser = launch(stack, profile);
            Page page = browser.newPage();
            assertNavigated(page.navigate(origin + "/hello"), origin);
            page.evaluate("localStorage.setItem('ptun-origin', " + js(value) + ")");
            assertEquals(value, page.evaluateString("localStorage.getItem('ptun-origin')"));
            // Control: another port is another origin; its storage is empty.
            assertNavigated(page.navigate(otherOrigin + "/hello"), otherOrigin);
            JsonNode otherBefore = page.evaluate("localStorage.getItem('ptun-origin')");
            assertTrue(otherBefore.isNull(), "storage leaked across ports: " + otherBefore);
            browser.close(); // graceful: the profile, localStorage included, is written to disk
            browser = null;

            long t0 = System.nanoTime();
            int secondIngressPort;
            do {
                stack.restartIngress(stack.ingressConfig().withListen(new InetSocketAddress("127.0.0.1", 0)), null);
                secondIngressPort = stack.proxy().getPort();
            } while (secondIngressPort == firstIngressPort);
            long restartMs = Journeys.msSince(t0);
            assertNotEquals(firstIngressPort, secondIngressPort);

            browser = launch(stack, profile);
            page = browser.newPage();
            assertNavigated(page.navigate(origin + "/hello"), origin);
            String origin2 = page.evaluateString("location.origin");
            String after = page.evaluateString("localStorage.getItem('ptun-origin')");
            assertEquals(origin, origin2);
            assertEquals(value, after, "localStorage lost across the ingress restart");
            assertTrue(page.proxyChallenges() >= 1, "the new ingress should have asked for the credential");
            assertNavigated(page.navigate(otherOrigin + "/hello"), otherOrigin);
            JsonNode otherAfter = page.evaluate("localStorage.getItem('ptun-origin')");
            assertTrue(otherAfter.isNull(), "storage at another port must stay empty: " + otherAfter);

            r.put("origin", origin);
            r.put("ingressPortBefore", firstIngressPort);
            r.put("ingressPortAfter", secondIngressPort);
            r.put("ingressRestartMs", restartMs);
            r.put("localStorageSurvived", value.equals(after));
            r.put("otherPortOrigin", otherOrigin);
            r.put("otherPortStorageEmpty", otherAfter.isNull());
            r.put("proxyChallengesAfterRestart", page.proxyChallenges());
        } finally {
            Closer.closeAll(browser, stack, other, app);
            Processes.deleteTree(profile);
        }
    }

    private static Browser launch(TunnelStack stack, Path profile) {
        return Browser.launch(Browser.Options.proxied(stack.proxy(), stack.session().username(),
                stack.session().password()).withProfile(profile));
    }
}
