package dev.previewtunnel.spikes.e2e;

import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.browser.Browser;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.stack.TunnelStack;
import io.netty.handler.ssl.SslContext;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What the journey runs need: the sample app, the streaming app, the real Vite dev server, the whole tunnel
 * (gateway + ingress, all three granted to the session as {@code localhost:PORT}) and one Chromium whose proxy is
 * the ingress.
 */
final class JourneyFixture implements AutoCloseable {
    static final int POOL_SIZE = 2;

    SampleApp app;
    StreamingTarget streaming;
    ViteDevServer vite;
    TunnelStack stack;
    Browser browser;
    Browser direct;
    /** The session's grant tokens: secrets that must never show up in an audit line or a result. */
    final List<String> grants = new ArrayList<>();

    static JourneyFixture start() throws Exception {
        Processes.require(Browser.CHROMIUM, "apt-get install chromium");
        JourneyFixture f = new JourneyFixture();
        try {
            f.app = SampleApp.start("127.0.0.1", 0);
            f.streaming = new StreamingTarget();
            f.vite = ViteDevServer.start();
            f.stack = TunnelStack.start(POOL_SIZE);
            f.grants.add(f.stack.grant("localhost", f.app.port()));
            f.grants.add(f.stack.grant("localhost", f.streaming.port()));
            f.grants.add(f.stack.grant("localhost", f.vite.port()));
            return f;
        } catch (Exception | Error e) {
            f.close();
            throw e;
        }
    }

    /** Restarts the ingress so that it reaches the gateway at {@code url} (a relay), trusting {@code tls}. */
    void reachGatewayThrough(URI url, SslContext tls) throws InterruptedException {
        IngressConfig c = stack.ingressConfig();
        stack.restartIngress(new IngressConfig(c.listen(), url, c.mux(), c.poolSize(), c.connectTimeout(),
                c.openTimeout(), c.maxRequestHead(), c.ioThreads()), tls);
        Processes.await("the ingress pool to connect through " + url, Duration.ofSeconds(30), () -> {
            TunnelPool.Status s = stack.ingress().pool().status();
            return s.connected() == POOL_SIZE;
        });
    }

    /** The session's browser, started on first use against the current ingress port. */
    Browser browser() {
        if (browser == null) {
            browser = Browser.launch(Browser.Options.proxied(stack.proxy(), stack.session().username(),
                    stack.session().password()));
            SpikeReport.environment("chromium", browser.version());
        }
        return browser;
    }

    /** A browser without any proxy, for baselines: straight to the apps on this machine's loopback. */
    Browser directBrowser() {
        if (direct == null) {
            direct = Browser.launch(Browser.Options.direct());
        }
        return direct;
    }

    @Override
    public void close() {
        Closer.closeAll(browser, direct, vite, stack, streaming, app);
    }
}
