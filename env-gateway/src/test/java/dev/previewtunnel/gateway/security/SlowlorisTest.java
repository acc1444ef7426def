package dev.previewtunnel.gateway.security;

import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.sampleapp.RawEchoServer;
import dev.previewtunnel.testing.Await;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Slowloris against the tunnel endpoint, with a 1 s handshake deadline ({@code withHandshakeTimeout}): a client
 * that drips its upgrade request one byte every 100 ms (it would need ~25 s) and a client that sends nothing
 * are both closed by the deadline (their sockets see EOF or a reset), while a normal client connects at the same
 * time and keeps its connection past the deadline (the deadline is removed on upgrade).
 */
class SlowlorisTest {
    private static final Duration DEADLINE = Duration.ofSeconds(1);

    @TempDir
    Path dir;

    SecurityFixture fixture;
    RawEchoServer echo;
    ScheduledExecutorService drip;

    @BeforeEach
    void start() throws Exception {
        echo = RawEchoServer.start("127.0.0.1", 0);
        fixture = SecurityFixture.start(dir, c -> c.withHandshakeTimeout(DEADLINE));
        drip = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "slowloris-drip");
            t.setDaemon(true);
            return t;
        });
    }

    @AfterEach
    void stop() {
        drip.shutdownNow();
        fixture.close();
        echo.close();
    }

    /** Blocks until the peer closes the socket; returns how long after {@code connectedAt} (bounded by SO_TIMEOUT). */
    static long awaitClosedMillis(Socket socket, long connectedAt) throws IOException {
        socket.setSoTimeout(10_000);
        InputStream in = socket.getInputStream();
        try {
            while (in.read() >= 0) {
                // a refusal body would be read here; the tunnel endpoint sends none for a timeout
            }
        } catch (SocketException reset) {
            // a reset (our drip hit a closed socket) is a close too
        }
        return (System.nanoTime() - connectedAt) / 1_000_000;
    }

    @Test
    void drippingAndSilentClientsAreClosedByTheDeadlineWhileANormalClientConnects() throws Exception {
        InetSocketAddress gateway = fixture.gateway.address();
        byte[] request = SecurityFixture.upgradeRequest(gateway, "Bearer " + fixture.token)
                .getBytes(StandardCharsets.US_ASCII);

        try (Socket dripper = new Socket(); Socket silent = new Socket()) {
            dripper.connect(gateway, 5000);
            long dripperConnected = System.nanoTime();
            silent.connect(gateway, 5000);
            long silentConnected = System.nanoTime();

            OutputStream out = dripper.getOutputStream();
            AtomicInteger dripped = new AtomicInteger();
            CompletableFuture<Void> dripStopped = new CompletableFuture<>();
            ScheduledFuture<?> task = drip.scheduleAtFixedRate(() -> {
                int i = dripped.get();
                if (i >= request.length) {
                    dripStopped.complete(null);
                    throw new IllegalStateException("whole request sent: the deadline did not fire");
                }
                try {
                    out.write(request[i]);
                    out.flush();
                    dripped.incrementAndGet();
                } catch (IOException closed) {
                    dripStopped.complete(null);
                    throw new IllegalStateException("stop dripping: the gateway closed the socket");
                }
            }, 0, 100, TimeUnit.MILLISECONDS);

            // Meanwhile a normal client connects and opens a stream.
            TunnelConnection normal = fixture.connect();
            String grant = fixture.grant("s-normal", "127.0.0.1", echo.port());
            Http2StreamChannel s = SecurityFixture.open(normal, new Authority("127.0.0.1", echo.port()), grant);
            assertEquals("2\n", SecurityFixture.exchange(s, "ok".getBytes(StandardCharsets.US_ASCII)));

            long dripperClosedAfter = awaitClosedMillis(dripper, dripperConnected);
            long silentClosedAfter = awaitClosedMillis(silent, silentConnected);
            task.cancel(false);

            assertTrue(dripped.get() < request.length,
                    "dripping client never completed its request (" + dripped.get() + "/" + request.length + ")");
            assertTrue(dripperClosedAfter >= DEADLINE.toMillis() - 100 && dripperClosedAfter < 4_000,
                    "dripping client closed by the 1 s deadline, after " + dripperClosedAfter + " ms");
            assertTrue(silentClosedAfter >= DEADLINE.toMillis() - 100 && silentClosedAfter < 4_000,
                    "silent client closed by the 1 s deadline, after " + silentClosedAfter + " ms");
            System.out.println("{\"test\":\"slowloris\",\"deadlineMillis\":" + DEADLINE.toMillis()
                    + ",\"drippedBytes\":" + dripped.get() + ",\"requestBytes\":" + request.length
                    + ",\"dripperClosedAfterMillis\":" + dripperClosedAfter
                    + ",\"silentClosedAfterMillis\":" + silentClosedAfter + "}");

            // The normal connection outlives the deadline: it was removed at upgrade.
            assertTrue(normal.isUsable(), "normal connection still open after the deadline passed");
            Http2StreamChannel s2 = SecurityFixture.open(normal, new Authority("127.0.0.1", echo.port()), grant);
            assertEquals("5\n", SecurityFixture.exchange(s2, "later".getBytes(StandardCharsets.US_ASCII)));
            Await.until("only the normal connection is counted", Duration.ofSeconds(5),
                    () -> fixture.gateway.connectionCount() == 1);
            normal.close();
        }
    }

    @Test
    void completeHeadWithoutBodyProgressStillHitsTheDeadline() throws Exception {
        // A request head that never ends (no blank line): the HTTP decoder keeps waiting, the deadline does not.
        InetSocketAddress gateway = fixture.gateway.address();
        try (Socket s = new Socket()) {
            s.connect(gateway, 5000);
            long connected = System.nanoTime();
            OutputStream out = s.getOutputStream();
            out.write(("GET /tunnel HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            long closedAfter = awaitClosedMillis(s, connected);
            assertTrue(closedAfter >= DEADLINE.toMillis() - 100 && closedAfter < 4_000,
                    "unfinished request head closed by the deadline, after " + closedAfter + " ms");
        }
    }
}
