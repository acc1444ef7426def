package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.proxy.IngressContext;
import dev.previewtunnel.ingress.proxy.ProxyServer;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 1, the browser side of the ingress (an audit guard, not a fix: it passed before): a client that
 * pipelines thousands of requests the proxy refuses and reads nothing while sending must not make the ingress queue
 * an answer per request. The proxy reads on demand and closes the connection after a refusal, so exactly one answer
 * comes back, then the end of the stream. Nothing is dialed: the tunnel pool is never started.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class PipelinedRefusalsTest {
    @ParameterizedTest
    @ValueSource(strings = {
            "GET http://localhost:5173/ HTTP/1.1\r\nHost: localhost:5173\r\n\r\n", // no credential: 407
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", // origin-form: not a proxy request
            "GET http://localhost:5173/ HTTP/1.1\r\nHost: localhost:5173\r\nBad Header\r\n\r\n"}) // 400
    void aPipelinedFloodOfRefusedRequestsGetsOneAnswer(String request) throws Exception {
        Transports transports = Transports.best();
        EventLoopGroup group = transports.newGroup(1, "pipelined-refusals-test");
        try {
            IngressConfig config = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                    URI.create("ws://127.0.0.1:9/tunnel"));
            TunnelPool pool = new TunnelPool(new TunnelClient(group, transports.socketChannel(),
                    MuxSettings.defaults()), config.gateway(), () -> "unused-token", null, 1,
                    config.connectTimeout());
            ProxyServer proxy = new ProxyServer(group, transports,
                    new IngressContext(config, new SessionRegistry(), pool, new AuditLog("ingress")));
            try (Socket s = new Socket()) {
                s.setReceiveBufferSize(4096);
                s.connect(proxy.address(), 5000);
                s.setSoTimeout(20_000);
                byte[] one = request.getBytes(StandardCharsets.ISO_8859_1);
                byte[] batch = new byte[one.length * 1000];
                for (int i = 0; i < 1000; i++) {
                    System.arraycopy(one, 0, batch, i * one.length, one.length);
                }
                OutputStream out = s.getOutputStream();
                int sent = 0;
                try {
                    for (; sent < 20; sent++) { // 20,000 requests, unread answers piling up if any were queued
                        out.write(batch);
                    }
                } catch (java.io.IOException closedByTheProxy) {
                    // the proxy closed after its answer: later writes fail, which is the point
                }
                InputStream in = s.getInputStream();
                ByteArrayOutputStream all = new ByteArrayOutputStream();
                try {
                    in.transferTo(all);
                } catch (java.net.SocketException reset) {
                    // a reset after the answer (the proxy closed with our requests unread) ends the stream too
                }
                String answers = all.toString(StandardCharsets.ISO_8859_1);
                int count = answers.split("HTTP/1\\.1 ", -1).length - 1;
                System.out.printf("PIPELINED %s: %d of %d request batches written, %d answers, %d bytes%n",
                        answers.isEmpty() ? "-" : answers.substring(9, 12), sent, 20, count, all.size());
                assertEquals(1, count, "one answer, then the end of the stream");
                assertTrue(answers.startsWith("HTTP/1.1 4"), answers.lines().findFirst().orElse(""));
            } finally {
                proxy.close();
            }
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
