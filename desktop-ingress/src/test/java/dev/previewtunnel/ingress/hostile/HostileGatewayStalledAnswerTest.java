package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.mux.relay.AcceptThenFlood;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.relay.WindowPacedFlood;
import dev.previewtunnel.mux.server.MuxTestServer;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http2.Http2Error;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile peers, item 11, the ingress's side (docs/security.md): a hostile (or compromised) gateway answers a
 * browser's request with an endless body while the browser reads nothing, and once the ingress has stopped reading
 * the stream (the browser connection is full) sends the rest of the stream's window one byte per DATA frame. Those
 * frames wait in the stream's queue; the ingress must count them as a stalled stream's and reset the stream at the
 * limit ({@code ENHANCE_YOUR_CALM}) instead of queueing a frame object per byte, up to a million per stream, on
 * every stream of every environment it serves. Before the ingress marked its HTTP exchanges' streams no reset came,
 * and the test JVM (1 GiB heap, paranoid leak detector) ran out of heap (docs/security.md, item 11).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class HostileGatewayStalledAnswerTest {
    private static final String ENV = "env-hostile";
    /**
     * Where the flood stops if no reset comes: well past the limit (16,384 queued frames at the default window plus
     * those in flight), and short of what would run the test JVM out of heap without the limit (it did at 1,100,000).
     */
    private static final int MAX_FRAMES = 100_000;

    @TempDir
    Path dir;

    @Test
    void oneByteFramesToAStalledExchangeAreReset() throws Exception {
        // The receiver returns credit at half its window: held back, room for the answer's head and a chunk more.
        WindowPacedFlood flood = new WindowPacedFlood(448 * 1024, MAX_FRAMES);
        EventLoopGroup group = Transports.best().newGroup(1, "hostile-gateway");
        try (MuxTestServer gateway = new MuxTestServer(group, Transports.best(), MuxSettings.defaults(),
                // The request's answer: an endless body, which the browser does not read.
                new AcceptThenFlood(flood, () -> Unpooled.copiedBuffer(
                        "HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n", StandardCharsets.US_ASCII)));
             IngressBeforeTestGateway ingress = new IngressBeforeTestGateway(gateway.port(), dir.resolve("keys"), ENV);
             Socket browser = ingress.slowBrowserGet("/endless")) {
            long reset;
            try {
                reset = flood.reset.get(60, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new AssertionError("no reset within 60 s: " + flood.fillerBytes.get() + " filler bytes, "
                        + flood.sent.get() + " one-byte frames sent (at most " + MAX_FRAMES + "), the stream's"
                        + " window last " + flood.lastWindow(), e);
            }
            System.out.printf("HOSTILE GATEWAY 1-byte DATA frames to a stalled exchange: %d KiB to stall it, then"
                            + " %d frames sent; stream reset (%s)%n", flood.fillerBytes.get() >> 10,
                    flood.sent.get(), Http2Error.valueOf(reset));
            assertEquals(Http2Error.ENHANCE_YOUR_CALM.code(), reset, "the stream was reset for another reason");
            // The limit is 16,384 queued frames at the default window; some more are in flight when it acts.
            assertTrue(flood.sent.get() < MAX_FRAMES, () -> flood.sent.get() + " frames before the reset");
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
