package dev.previewtunnel.spikes.e2e;

import dev.previewtunnel.spikes.browser.Page;
import dev.previewtunnel.spikes.lab.Processes;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Run 7: runs 1 and 2 again, with the ingress reaching the gateway (a) through nginx as a TLS-terminating
 * WebSocket reverse proxy ({@code wss://}, the ingress trusting exactly the test's self-signed certificate) and
 * (b) through {@code ssh -N -L} to a real sshd. The browser, the apps and the grants are the same; only the
 * ingress → gateway hop changes.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class RelayRunTest {

    @Nested
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    @ExtendWith(SpikeReport.class)
    class ThroughNginxWss {
        JourneyFixture f;
        NginxRelay nginx;

        @BeforeAll
        void start() throws Exception {
            f = JourneyFixture.start();
            nginx = NginxRelay.start(f.stack.gateway().address().getPort());
            SpikeReport.environment("nginx", nginx.version());
            SslContext trust = SslContextBuilder.forClient().trustManager(nginx.certificate().certificate()).build();
            f.reachGatewayThrough(nginx.gatewayUrl(), trust);
        }

        @AfterAll
        void stop() {
            Closer.closeAll(f, nginx);
        }

        @Test
        @Order(1)
        @SpikeRun("relay_nginx_wss_vite_hmr")
        void viteHmr(SpikeResult r) {
            r.put("gatewayUrl", nginx.gatewayUrl().toString());
            Page page = f.browser().newPage();
            try {
                Journeys.viteHmr(page, f.vite, r, f.stack.proxy().getPort());
            } finally {
                page.close();
            }
        }

        /**
         * The last run of this relay (it stops and restarts the gateway): afterwards it also shows, from nginx's own log, that
         * nginx carried the pool.
         */
        @Test
        @Order(2)
        @SpikeRun("relay_nginx_wss_app_websocket_eventsource")
        void appStreaming(SpikeResult r) throws Exception {
            r.put("gatewayUrl", nginx.gatewayUrl().toString());
            Page page = f.browser().newPage();
            try {
                Journeys.appStreaming(page, f.streaming, f.app, r, f.stack.proxy().getPort(), null);
            } finally {
                page.close();
            }
            // nginx logs an upgraded request when its connection ends. Stop the gateway (it closes its side of every
            // tunnel connection, which nginx sees at once): the access log must then show the upgrades of the pool
            // that carried runs 1 and 2, "GET /tunnel HTTP/1.1" 101. (Stopping the ingress instead did not end
            // them reliably: in some runs nginx logged nothing within 30 s.)
            long before = nginx.tunnelUpgradesLogged();
            f.stack.stopGateway();
            try {
                Processes.await("nginx to log the closed pool's upgrades (GET /tunnel 101)", Journeys.WAIT,
                        () -> nginx.tunnelUpgradesLogged() >= before + JourneyFixture.POOL_SIZE);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; before: " + before + ", now: "
                        + nginx.tunnelUpgradesLogged() + "; " + nginx.logs(), e);
            } finally {
                // A stopped gateway cannot be closed again by the fixture: start it again where it was.
                f.stack.restartGatewayOnSameAddress();
            }
            long logged = nginx.tunnelUpgradesLogged();
            assertTrue(logged > 0);
            r.put("nginxAccessLogTunnelUpgrades101", logged);
        }
    }

    @Nested
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    @ExtendWith(SpikeReport.class)
    class ThroughSshTunnel {
        JourneyFixture f;
        SshRelay ssh;

        @BeforeAll
        void start() throws Exception {
            f = JourneyFixture.start();
            ssh = SshRelay.start(f.stack.gateway().address().getPort());
            SpikeReport.environment("openssh", ssh.version());
            f.reachGatewayThrough(ssh.gatewayUrl(), null);
        }

        @AfterAll
        void stop() {
            Closer.closeAll(f, ssh);
        }

        @Test
        @Order(1)
        @SpikeRun("relay_ssh_vite_hmr")
        void viteHmr(SpikeResult r) {
            r.put("gatewayUrl", ssh.gatewayUrl().toString());
            Page page = f.browser().newPage();
            try {
                Journeys.viteHmr(page, f.vite, r, f.stack.proxy().getPort());
            } finally {
                page.close();
            }
            r.put("sshdForwardsToGateway", assertSshdForwardedThePool(ssh));
        }

        @Test
        @Order(2)
        @SpikeRun("relay_ssh_app_websocket_eventsource")
        void appStreaming(SpikeResult r) {
            r.put("gatewayUrl", ssh.gatewayUrl().toString());
            Page page = f.browser().newPage();
            try {
                Journeys.appStreaming(page, f.streaming, f.app, r, f.stack.proxy().getPort(), null);
            } finally {
                page.close();
            }
            r.put("sshdForwardsToGateway", assertSshdForwardedThePool(ssh));
        }

        /** sshd's own log: every connection of the ingress pool arrived as a direct-tcpip channel to the gateway. */
        private static long assertSshdForwardedThePool(SshRelay ssh) {
            long forwards = ssh.forwardsToGatewayLogged();
            assertTrue(forwards >= JourneyFixture.POOL_SIZE, "sshd logged " + forwards
                    + " direct-tcpip channels to the gateway, the pool has " + JourneyFixture.POOL_SIZE);
            return forwards;
        }
    }
}
