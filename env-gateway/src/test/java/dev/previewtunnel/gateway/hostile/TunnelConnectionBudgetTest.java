package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.testing.RawHttp;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 5, gateway side: a local process opening hundreds of idle sockets to the tunnel listener does not
 * keep an honest ingress out. Connections still in the handshake are capped (here 50, by the setting); a new one
 * over the cap closes the oldest handshaking one, so the squatters hold at most the cap and an honest client, which
 * upgrades at once, gets in and opens a stream.
 */
class TunnelConnectionBudgetTest {
    private static final String ENV = "e-budget";
    private static final int HANDSHAKING = 50;
    private static final int IDLE = 600;

    private final Transports transports = Transports.best();
    private EventLoopGroup clientGroup;
    private GatewayServer gateway;
    private SampleApp app;
    private GrantIssuer issuer;

    @BeforeEach
    void start(@TempDir Path dir) throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        GatewayConfig config = GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", 0));
        config = config.withLimits(config.limits().withConnectionCaps(1000, HANDSHAKING));
        gateway = GatewayServer.start(config, keys.verificationKeys(), null, new SimpleMeterRegistry());
        app = SampleApp.start("127.0.0.1", 0);
        clientGroup = transports.newGroup(1, "budget-test-client");
    }

    @AfterEach
    void stop() {
        if (clientGroup != null) {
            clientGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
        if (app != null) {
            app.close();
        }
        if (gateway != null) {
            gateway.close();
        }
    }

    @Test
    void idleSocketsOnTheTunnelListenerDoNotKeepAnHonestClientOut() throws Exception {
        URI url = URI.create(gateway.url(false));
        InetSocketAddress listener = new InetSocketAddress("127.0.0.1", url.getPort());
        List<Socket> idle = new ArrayList<>();
        try {
            long since = System.nanoTime();
            for (int i = 0; i < IDLE; i++) {
                idle.add(new Socket(listener.getAddress(), listener.getPort()));
            }
            long start = System.nanoTime();
            TunnelClient client = new TunnelClient(clientGroup, transports.socketChannel(), MuxSettings.defaults());
            TunnelConnection connection = client.connect(url, issuer.issueConnectionToken(ENV, Duration.ofHours(1)),
                    null, Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
            Http2StreamChannel stream = connection.openStream(new Authority("127.0.0.1", app.port()),
                    issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "127.0.0.1", app.port()), Duration.ofMinutes(5)),
                    Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
            long honestMs = (System.nanoTime() - start) / 1_000_000;
            // Squatters beyond the handshaking cap were closed (the oldest first, as counted on the event loops)
            // as the newer ones arrived; at most the cap of them is left.
            int closed = 0;
            for (Socket s : idle) {
                if (RawHttp.millisUntilClosed(s, since, Duration.ofSeconds(5)) >= 0) {
                    closed++;
                }
            }
            System.out.printf("{\"test\":\"tunnel_idle_sockets\",\"idle\":%d,\"handshakingCap\":%d,"
                    + "\"squattersClosed\":%d,\"honestConnectAndOpenMs\":%d}%n", IDLE, HANDSHAKING, closed, honestMs);
            assertTrue(stream.isActive(), "the honest client's stream is open");
            assertTrue(closed >= IDLE - HANDSHAKING, "squatters beyond the handshaking cap of " + HANDSHAKING
                    + " are closed: " + closed + " of " + IDLE);
            connection.channel().close();
        } finally {
            for (Socket s : idle) {
                s.close();
            }
        }
    }
}
