package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.testing.Await;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A drain lasts as long as --drain-timeout allows, not as long as the keepalive timeout: the HTTP/2 codec bounds
 * an ordinary graceful close by the keepalive timeout, and a drain must replace that bound with its own. Each test
 * stops one side (keepalive timeout 2 s, drain timeout 10 s) while a response is in flight, then reads the rest at
 * a paced 4 MiB/s, so the stream stays open about 5 s into the drain, and checks that every byte arrived in order.
 */
class DrainOutlastsKeepaliveTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long SIZE = 24L << 20;
    private static final long BYTES_PER_SECOND = 4L << 20;
    private static final Duration KEEPALIVE_TIMEOUT = Duration.ofSeconds(2);
    private static final long MULTIPLIER = 0x9E3779B97F4A7C15L; // the sample app's /bytes pattern

    @TempDir
    Path tmp;

    @Test
    void theIngressDrainOutlastsTheKeepaliveTimeout() throws Exception {
        try (TestStack stack = TestStack.start(tmp, new SimpleMeterRegistry(), c -> c)) {
            RunningIngress running = startIngress(stack);
            try {
                long[] read = transferAcrossStop(stack, running, () -> running.command.stop(), () -> { });
                assertEquals(SIZE, read[0], "the response in flight arrived whole during the ingress's drain");
                assertTrue(read[1] >= 3 * KEEPALIVE_TIMEOUT.toMillis() / 2,
                        "the transfer outlasted the keepalive timeout (" + read[1] + " ms after the stop)");
            } finally {
                running.close();
            }
            assertEquals(0, running.awaitExit());
        }
    }

    @Test
    void theGatewayDrainOutlastsTheKeepaliveTimeout() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (TestStack stack = TestStack.start(tmp, registry, c -> c
                .withMux(c.mux().withKeepAlive(Duration.ofSeconds(1), KEEPALIVE_TIMEOUT))
                .withDrainTimeout(Duration.ofSeconds(10)))) {
            RunningIngress running = startIngress(stack);
            try {
                // --pool 1 still keeps one connection per ingress event loop: two with --io-threads 2
                // (docs/architecture.md).
                Await.until("the tunnel connections counted as open", Duration.ofSeconds(20),
                        () -> connections(registry, "open") == 2);
                assertEquals(0, connections(registry, "draining"));
                long[] read = transferAcrossStop(stack, running, stack.gateway::close, () -> {
                    // The connection carrying the transfer is draining now, not open (the ingress's replacement
                    // cannot connect: the listener is closed); the idle one closed at once.
                    Await.until("the connection counted as draining", Duration.ofSeconds(5),
                            () -> connections(registry, "draining") == 1 && connections(registry, "open") == 0);
                });
                assertEquals(SIZE, read[0], "the response in flight arrived whole during the gateway's drain");
                assertTrue(read[1] >= 3 * KEEPALIVE_TIMEOUT.toMillis() / 2,
                        "the transfer outlasted the keepalive timeout (" + read[1] + " ms after the stop)");
            } finally {
                running.close();
            }
            running.awaitExit();
        }
    }

    private RunningIngress startIngress(TestStack stack) throws Exception {
        return RunningIngress.start("run", "--gateway", stack.url(), "--token", stack.token(),
                "--grant", stack.grant("default", stack.app.port()), "--state-dir", tmp.resolve("state").toString(),
                "--keepalive-interval", "1s", "--keepalive-timeout", "2s", "--drain-timeout", "10s", "--pool", "1",
                "--io-threads", "2");
    }

    /**
     * Requests SIZE bytes, reads 1 MiB, starts {@code stop} on another thread, reads the rest at the paced rate
     * checking each byte against the pattern. Returns {bytes read, ms from the stop to the end}.
     */
    private static long[] transferAcrossStop(TestStack stack, RunningIngress running, Runnable stop,
                                             Runnable whileDraining) throws Exception {
        try (Socket browser = IngressCliHarness.getThroughProxy(running.readyLine(), "localhost:" + stack.app.port(),
                "/bytes?n=" + SIZE)) {
            InputStream in = browser.getInputStream();
            byte[] buf = new byte[1 << 16];
            long total = 0;
            while (total < 1 << 20) {
                int n = in.read(buf, 0, (int) Math.min(buf.length, (1 << 20) - total));
                assertTrue(n > 0, "response ended early, at " + total);
                checkPattern(buf, n, total);
                total += n;
            }

            CompletableFuture<Void> stopped = CompletableFuture.runAsync(stop); // as the SIGTERM hook does
            long start = System.nanoTime();
            long atStop = total;
            whileDraining.run();
            while (true) {
                long since = total - atStop;
                Await.until("the reader's pace allows more", Duration.ofSeconds(30),
                        () -> allowed(start) > since);
                int want = (int) Math.min(buf.length, allowed(start) - since);
                int n = in.read(buf, 0, want);
                if (n < 0) {
                    break;
                }
                checkPattern(buf, n, total);
                total += n;
            }
            long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            stopped.get(30, TimeUnit.SECONDS);
            return new long[] {total, elapsedMillis};
        }
    }

    private static double connections(SimpleMeterRegistry registry, String state) {
        return registry.get("ptun.gateway.connections.by.state").tag("state", state).gauge().value();
    }

    private static long allowed(long startNanos) {
        return (System.nanoTime() - startNanos) * BYTES_PER_SECOND / 1_000_000_000L;
    }

    private static void checkPattern(byte[] buf, int n, long offset) {
        for (int i = 0; i < n; i++) {
            byte expected = (byte) (((offset + i) * MULTIPLIER) >>> 56);
            if (buf[i] != expected) {
                throw new AssertionError("byte " + (offset + i) + " differs from the served pattern");
            }
        }
    }
}
