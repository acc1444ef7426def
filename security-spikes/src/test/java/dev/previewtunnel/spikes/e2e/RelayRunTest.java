package dev.previewtunnel.spikes.e2e;

import dev.previewtunnel.spikes.browser.Page;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.concurrent.TimeUnit;

/**
 * Run 7: runs 1 and 2 again, with the ingress reaching the gateway (a) through nginx as a TLS-terminating
 * WebSocket reverse proxy ({@code wss://}, the ingress trusting exactly the test's self-signed certificate) and
 * (b) through {@code ssh -N -L} to a real sshd. The browser, the apps and the grants are the same; only the
 * ingress → gateway hop changes.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class RelayRunTest {

    @Nested
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

        @Test
        @SpikeRun("relay_nginx_wss_app_websocket_eventsource")
        void appStreaming(SpikeResult r) {
            r.put("gatewayUrl", nginx.gatewayUrl().toString());
            Page page = f.browser().newPage();
            try {
                Journeys.appStreaming(page, f.streaming, f.app, r, f.stack.proxy().getPort(), null);
            } finally {
                page.close();
            }
        }
    }

    @Nested
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
        @SpikeRun("relay_ssh_vite_hmr")
        void viteHmr(SpikeResult r) {
            r.put("gatewayUrl", ssh.gatewayUrl().toString());
            Page page = f.browser().newPage();
            try {
                Journeys.viteHmr(page, f.vite, r, f.stack.proxy().getPort());
            } finally {
                page.close();
            }
        }

        @Test
        @SpikeRun("relay_ssh_app_websocket_eventsource")
        void appStreaming(SpikeResult r) {
            r.put("gatewayUrl", ssh.gatewayUrl().toString());
            Page page = f.browser().newPage();
            try {
                Journeys.appStreaming(page, f.streaming, f.app, r, f.stack.proxy().getPort(), null);
            } finally {
                page.close();
            }
        }
    }
}
