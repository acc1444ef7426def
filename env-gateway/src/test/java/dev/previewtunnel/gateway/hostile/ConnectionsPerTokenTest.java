package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.mux.client.TunnelConnectException;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.testing.Await;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 3: one connection token holds at most {@code --max-connections-per-token} tunnel connections. The
 * next upgrade is answered 429 {@code too_many_connections} (and the client says why); other tokens are not
 * affected; once one of the token's connections closes, the token may connect again.
 */
class ConnectionsPerTokenTest {
    private static final int CAP = 3;

    @TempDir
    Path dir;

    @Test
    void theConnectionAfterTheCapIsRefused429AndAClosedOneFreesItsPlace() throws Exception {
        try (TokenFloodGateway gw = new TokenFloodGateway(dir, l -> l.withTokenLimits(CAP,
                l.grantFailuresPerSecond(), l.grantFailureCoolDown(), l.tokenFailuresPerSecond()))) {
            String token = gw.newToken();
            List<TunnelConnection> held = new ArrayList<>();
            try {
                for (int i = 0; i < CAP; i++) {
                    held.add(gw.connect(token));
                }
                TokenFloodGateway.Answer refused = gw.rawUpgrade(token);
                assertEquals(429, refused.status(), refused.body());
                assertTrue(refused.body().contains("\"error\":\"too_many_connections\""), refused.body());

                ExecutionException viaClient = assertThrows(ExecutionException.class, () -> gw.connect(token));
                TunnelConnectException e = assertInstanceOf(TunnelConnectException.class, viaClient.getCause());
                assertTrue(e.getMessage().contains("retry later") && e.getMessage().contains("too_many_connections"),
                        e.getMessage());

                assertEquals(101, gw.rawUpgrade(gw.newToken()).status(), "another token still connects");

                held.remove(0).close();
                // The count drops when the gateway sees the close; then the token connects again.
                Await.until("the token's place freed", Duration.ofSeconds(10), () -> {
                    try {
                        return gw.rawUpgrade(token).status() == 101;
                    } catch (java.io.IOException io) {
                        throw new AssertionError(io);
                    }
                });
            } finally {
                held.forEach(TunnelConnection::close);
            }
        }
    }
}
