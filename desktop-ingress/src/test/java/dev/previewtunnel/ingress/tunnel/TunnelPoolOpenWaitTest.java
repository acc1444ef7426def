package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.ingress.tunnel.PoolFixtures.Pool;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An open that finds no connection up waits for the pool's first attempt, but never longer than its own open
 * timeout: a gateway address that accepts TCP and then says nothing (a hung relay) must not hold the browser for
 * the whole connect timeout, nor forever.
 */
class TunnelPoolOpenWaitTest {

    @Test
    void anOpenWaitingForTheFirstAttemptGivesUpAtTheOpenTimeout() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             Pool p = new Pool("open-wait", 1, URI.create("ws://127.0.0.1:" + silent.getLocalPort() + "/tunnel"),
                     "token", 1, Duration.ofSeconds(60))) {
            p.pool.start();
            // The TCP connect succeeds (the backlog takes it); the WebSocket handshake is never answered.
            try (Socket accepted = silent.accept()) {
                long start = System.nanoTime();
                Future<Http2StreamChannel> open = p.pool.openStream(new Authority("localhost", 5173), "grant",
                        Duration.ofMillis(300), p.group.next());
                assertTrue(open.await(10, TimeUnit.SECONDS), "the open settles");
                long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertFalse(open.isSuccess());
                TunnelStreamException e = assertInstanceOf(TunnelStreamException.class, open.cause());
                assertEquals(TunnelError.GATEWAY_UNREACHABLE, e.error());
                // Bounded by the 300 ms open timeout, far below the 60 s connect timeout.
                assertTrue(tookMillis >= 250 && tookMillis < 5_000, "gave up after " + tookMillis + " ms");
            }
        }
    }

    @Test
    void aPoolThatWasNeverStartedAnswersAtOnce() throws Exception {
        try (Pool p = new Pool("open-wait", 1, URI.create("ws://127.0.0.1:9/tunnel"), "token", 1,
                Duration.ofSeconds(60))) {
            Future<Http2StreamChannel> open = p.pool.openStream(new Authority("localhost", 5173), "grant",
                    Duration.ofSeconds(60), p.group.next());
            assertTrue(open.await(5, TimeUnit.SECONDS), "no wait for an attempt that will never come");
            assertEquals(TunnelError.GATEWAY_UNREACHABLE,
                    assertInstanceOf(TunnelStreamException.class, open.cause()).error());
        }
    }
}
