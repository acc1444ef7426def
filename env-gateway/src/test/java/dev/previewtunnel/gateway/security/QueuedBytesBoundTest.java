package dev.previewtunnel.gateway.security;

import dev.previewtunnel.gateway.GatewayLimits;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.ReadBuffers;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.testing.Await;
import io.micrometer.core.instrument.Counter;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The gateway's memory for many busy streams behind one connection is bounded per connection
 * ({@code --max-queued-bytes}), not only per stream.
 *
 * <p>Twenty streams download endlessly from loopback targets to a client that never reads: each stream's HTTP/2
 * window (1 MiB) fills, then the gateway queues target bytes until it stops reading. What it read from the
 * targets beyond the windows is what it holds. With a 1 MiB budget each stream's mark ends at a 32 KiB share, but
 * the streams open one after another and fill as fast as they open, and a stream keeps what it queued under its
 * earlier, larger share: so the bound is the sum of the shares each stream had when it opened, plus one read
 * (16 KiB) each ({@link #worstCaseHeld}). With the budget out of the way (1 GiB) each stream holds its own 512 KiB
 * high-water mark, so the same run shows what the budget saves.
 */
class QueuedBytesBoundTest {
    private static final int STREAMS = 20;
    private static final long WINDOW = MuxSettings.defaults().streamWindow();
    private static final long HIGH_WATER = MuxSettings.defaults().streamWriteHighWaterMark();
    /** StreamWriteShares.MIN_HIGH: no stream's mark goes below it. */
    private static final long MIN_SHARE = 32 * 1024;
    /** The most one read of a target socket delivers. */
    private static final long READ = ReadBuffers.MAX_READ;

    @TempDir
    Path tmp;

    @Test
    void aConnectionsQueuedTargetBytesStayWithinItsBudget() throws Exception {
        long budget = 1 << 20;
        long held = heldAfterFillingWindows(budget);
        long bound = worstCaseHeld(budget);
        System.out.printf("queued at the gateway with a %d KiB budget: %d KiB (bound %d KiB)%n",
                budget >> 10, held >> 10, bound >> 10);
        assertTrue(held <= bound, () -> "held " + held + " bytes beyond the windows, bound " + bound);
        assertTrue(held >= budget / 2, () -> "the budget is used, not starved: " + held);

        long unbounded = heldAfterFillingWindows(1L << 30);
        System.out.printf("queued at the gateway without a budget: %d KiB%n", unbounded >> 10);
        assertTrue(unbounded >= STREAMS * HIGH_WATER, () -> "without the budget each stream holds its high-water "
                + "mark, so this test can tell the difference: " + unbounded);
    }

    /**
     * The most the gateway may hold for {@link #STREAMS} streams that each fill before the next opens: stream k keeps
     * the share it got when it opened (StreamWriteShares.highFor: budget / k as a power of two, from 32 to 512 KiB;
     * marks only shrink as streams join, and none closes here) plus one read. 2.9 MiB for a 1 MiB budget, against
     * 10 MiB without one.
     */
    private static long worstCaseHeld(long budget) {
        long sum = 0;
        for (int k = 1; k <= STREAMS; k++) {
            long share = budget / k;
            sum += (share >= HIGH_WATER ? HIGH_WATER : Math.max(MIN_SHARE, Long.highestOneBit(share))) + READ;
        }
        return sum;
    }

    /** Bytes the gateway read from the targets beyond what the client's stream windows let it send. */
    private long heldAfterFillingWindows(long budget) throws Exception {
        ExecutorService senders = Executors.newCachedThreadPool();
        List<Socket> accepted = new ArrayList<>();
        try (ServerSocket target = new ServerSocket(0, STREAMS, InetAddress.getByName("127.0.0.1"));
             SecurityFixture f = SecurityFixture.start(tmp.resolve("b" + budget), c -> c.withLimits(limits(budget)))) {
            senders.execute(() -> acceptAndSendForever(target, accepted, senders));
            TunnelConnection connection = f.connect();
            String grant = f.grant("s-1", "127.0.0.1", target.getLocalPort());
            List<Http2StreamChannel> streams = new ArrayList<>();
            for (int i = 0; i < STREAMS; i++) {
                streams.add(SecurityFixture.open(connection, new Authority("127.0.0.1", target.getLocalPort()),
                        grant)); // opened with auto-read off and never read: the windows are never returned
            }
            Counter fromTarget = f.gateway.metrics().registry().find("ptun.gateway.stream.bytes")
                    .tag("direction", "from_target").counter();
            long[] last = {-1};
            long[] stableSince = {System.nanoTime()};
            Await.until("the gateway stops reading from the targets", Duration.ofSeconds(30), () -> {
                long now = (long) fromTarget.count();
                if (now != last[0]) {
                    last[0] = now;
                    stableSince[0] = System.nanoTime();
                    return false;
                }
                return now >= STREAMS * WINDOW && System.nanoTime() - stableSince[0] > 500_000_000L;
            });
            for (Http2StreamChannel s : streams) {
                s.close();
            }
            return last[0] - STREAMS * WINDOW;
        } finally {
            senders.shutdownNow();
            synchronized (accepted) {
                for (Socket s : accepted) {
                    s.close();
                }
            }
            assertTrue(senders.awaitTermination(10, TimeUnit.SECONDS));
        }
    }

    private static GatewayLimits limits(long budget) {
        GatewayLimits d = GatewayLimits.defaults();
        return new GatewayLimits(d.streamsPerSession(), d.opensPerSecond(), d.openBurst(),
                d.pendingDialsPerConnection(), d.streamIdleTimeout(), d.connectionIdleTimeout(), budget);
    }

    private static void acceptAndSendForever(ServerSocket server, List<Socket> accepted, ExecutorService senders) {
        try {
            while (true) {
                Socket s = server.accept();
                synchronized (accepted) {
                    accepted.add(s);
                }
                senders.execute(() -> {
                    byte[] chunk = new byte[64 * 1024];
                    try (OutputStream out = s.getOutputStream()) {
                        while (true) {
                            out.write(chunk);
                        }
                    } catch (IOException e) {
                        // the stream was closed: done
                    }
                });
            }
        } catch (IOException e) {
            // the server socket was closed: done
        }
    }
}
