package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Stopping {@code run} (what SIGTERM does) is a bounded graceful close: no new browser connections, but a response
 * in flight when the stop came still arrives whole (within --drain-timeout); then the ingress exits 0.
 */
class RunDrainCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long SIZE = 64L * 1024 * 1024;

    @TempDir
    Path tmp;

    @Test
    void aResponseInFlightFinishesAfterStop() throws Exception {
        try (TestStack stack = TestStack.start(tmp)) {
            Path state = tmp.resolve("state");
            RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token", stack.token(),
                    "--grant", stack.grant("default", stack.app.port()), "--state-dir", state.toString(),
                    "--drain-timeout", "30s", "--pool", "1");
            CompletableFuture<Void> stopped;
            long total;
            try {
                try (Socket browser = IngressCliHarness.getThroughProxy(running.readyLine(),
                        "localhost:" + stack.app.port(), "/bytes?n=" + SIZE)) {
                    InputStream in = browser.getInputStream();
                    assertEquals(1 << 20, in.readNBytes(1 << 20).length);

                    stopped = CompletableFuture.runAsync(running.command::stop); // as the SIGTERM hook does
                    total = 1 << 20;
                    byte[] buf = new byte[1 << 16];
                    for (int n; (n = in.read(buf)) >= 0; ) {
                        total += n;
                    }
                }
                assertEquals(SIZE, total, "the response in flight arrived whole after the stop");
                stopped.get(30, TimeUnit.SECONDS);
            } finally {
                running.close();
            }
            assertEquals(0, running.awaitExit());
            assertFalse(Files.exists(state.resolve("control.json")));
            assertTrue(running.captured.err().contains("ingress stopped"), running.captured::err);
        }
    }
}
