package dev.previewtunnel.spikes.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.spikes.browser.Browser;
import dev.previewtunnel.spikes.browser.Page;
import dev.previewtunnel.spikes.lab.Processes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.spikes.e2e.Journeys.WAIT;
import static dev.previewtunnel.spikes.e2e.Journeys.assertNavigated;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 10, in a real Chromium: 50 Vite pages opened one after the other, each until its HMR WebSocket
 * (a CONNECT relay through the ingress) is connected, then closed through DevTools ({@code Target.closeTarget}).
 * Afterwards the session's live stream and browser connection counts (what {@code status} shows) return to zero, and every ingress
 * {@code stream_opened} has exactly one {@code stream_closed} (paired by stream id, with bytes and why); the
 * gateway closed as many streams as it opened.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@ExtendWith(SpikeReport.class)
class HmrStreamBookkeepingRunTest {
    static final int PAGES = 50;
    static JourneyFixture f;

    @BeforeAll
    static void start() throws Exception {
        f = JourneyFixture.start();
    }

    @AfterAll
    static void stop() {
        if (f != null) {
            f.close();
        }
    }

    @Test
    @SpikeRun("hmr_stream_bookkeeping")
    void fiftyHmrPagesOpenedAndClosedLeaveNoLiveStream(SpikeResult r) {
        Browser browser = f.browser();
        BrowserSession session = f.stack.session();
        String url = "http://localhost:" + f.vite.port() + "/";
        String authority = "localhost:" + f.vite.port();
        try (AuditCapture audit = new AuditCapture()) {
            long t0 = System.nanoTime();
            for (int i = 0; i < PAGES; i++) {
                Page page = browser.newPage();
                try {
                    assertNavigated(page.navigate(url), url);
                    Processes.await("page " + i + ": Vite's HMR client connected", WAIT,
                            () -> page.console().stream().anyMatch(m -> m.contains("[vite] connected")));
                } finally {
                    page.close(); // Target.closeTarget
                }
            }
            r.put("pages", PAGES);
            r.put("openCloseMs", (System.nanoTime() - t0) / 1_000_000);
            r.put("liveStreamsRightAfter", session.liveStreams());
            r.put("liveConnectionsRightAfter", session.liveConnections());
            long t1 = System.nanoTime();
            // Chromium may keep an idle keep-alive connection (and its stream) a while: a bounded condition wait.
            Processes.await("the session's live streams back to zero", Duration.ofSeconds(90),
                    () -> session.liveStreams() == 0);
            r.put("msToZeroLiveStreams", (System.nanoTime() - t1) / 1_000_000);
            // Browser connections too: an idle keep-alive one is closed by the ingress's request-head timeout (30s
            // by default); a relay's once both its sides ended.
            Processes.await("the session's live browser connections back to zero", Duration.ofSeconds(90),
                    () -> session.liveConnections() == 0);
            r.put("msToZeroLiveConnections", (System.nanoTime() - t1) / 1_000_000);
            Processes.await("as many stream_closed as stream_opened on both sides", Duration.ofSeconds(30), () ->
                    count(audit, "ingress", "stream_closed") == count(audit, "ingress", "stream_opened")
                            && count(audit, "gateway", "stream_closed") == count(audit, "gateway", "stream_opened"));

            List<JsonNode> opened = audit.matching(AuditCapture.event("ingress", "stream_opened"));
            List<JsonNode> closed = audit.matching(AuditCapture.event("ingress", "stream_closed"));
            long connects = opened.stream().filter(o -> "connect".equals(o.path("kind").asText())
                    && authority.equals(o.path("authority").asText())).count();
            Map<String, Integer> pairs = new HashMap<>();
            opened.forEach(o -> pairs.merge(o.path("stream").asText(), 1, Integer::sum));
            Map<String, Integer> whys = new HashMap<>();
            for (JsonNode c : closed) {
                assertEquals(1, pairs.getOrDefault(c.path("stream").asText(), 0), "unpaired: " + c);
                assertTrue(c.has("bytesToTarget") && c.has("bytesFromTarget"), c.toString());
                whys.merge(c.path("kind").asText() + ":" + c.path("why").asText(), 1, Integer::sum);
            }
            r.put("ingressStreamsOpened", opened.size());
            r.put("ingressStreamsClosed", closed.size());
            r.put("hmrConnectStreams", connects);
            r.put("gatewayStreamsOpened", count(audit, "gateway", "stream_opened"));
            r.put("gatewayStreamsClosed", count(audit, "gateway", "stream_closed"));
            r.put("closedByKindAndWhy", whys.toString());
            assertTrue(connects >= PAGES, "one HMR CONNECT per page at least: " + connects);
            assertEquals(opened.size(), pairs.size(), "stream ids are unique");
            assertEquals(opened.size(), closed.size());
            assertEquals(0, session.liveStreams());
        }
    }

    private static long count(AuditCapture audit, String side, String event) {
        return audit.matching(AuditCapture.event(side, event)).size();
    }
}
