package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.ingress.tunnel.PoolFixtures.Pool;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.time.Duration;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Closing a pool ends its connect attempts that are mid-handshake, while its event loops still run. Left to the
 * loops' shutdown, one that completed its handshake during that shutdown was closed by nobody: the gateway kept it
 * as a third tunnel connection after an ingress restart (IngressResilienceTest's rolling restart, 1 run in 3).
 */
class TunnelPoolCloseTest {

    @Test
    void closeEndsAnAttemptWhoseUpgradeIsUnanswered() throws Exception {
        try (ServerSocket gateway = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             // A connect timeout far beyond the wait below: only close() can end the attempt in time.
             Pool p = new Pool("pool-close", 1, URI.create("ws://127.0.0.1:" + gateway.getLocalPort() + "/tunnel"),
                     "token", 1, Duration.ofSeconds(120))) {
            TunnelPool pool = p.pool;
            pool.start();
            try (Socket attempt = gateway.accept()) {
                InputStream in = attempt.getInputStream();
                readUpgradeRequest(in); // the attempt is mid-handshake: upgrade sent, never answered
                assertEquals(1, pool.status().connecting());

                pool.close();

                attempt.setSoTimeout(20_000);
                try {
                    assertEquals(-1, in.read(), "the gateway sees the attempt's connection end");
                } catch (SocketTimeoutException e) {
                    fail("the abandoned attempt's connection was still open 20 s after the pool closed");
                } catch (java.net.SocketException reset) {
                    // A reset ends the connection too.
                }
            }
        }
    }

    private static void readUpgradeRequest(InputStream in) throws Exception {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                fail("the attempt closed before sending its upgrade: " + head);
            }
            head.append((char) b);
        }
        assertTrue(head.toString().startsWith("GET /tunnel HTTP/1.1"), head.toString().split("\r\n")[0]);
        assertTrue(head.toString().toLowerCase(Locale.ROOT).contains("upgrade: websocket"), "a WebSocket upgrade");
    }
}
