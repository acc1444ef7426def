package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.testing.Await;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 17 item 5, the decision in docs/security.md ("Expiry and live streams"): a grant's expiry gates stream
 * opens, not streams already open. A tunnel opened under a 3-second grant (the gateway tolerating no clock skew)
 * keeps carrying requests after the grant expired, as an HMR WebSocket must across a renewal on the desktop; a new
 * stream with the expired grant is refused; revoking the grant ends the live tunnel at once.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class GrantExpiryLiveStreamTest {
    @TempDir
    Path tmp;

    @Test
    void aStreamOutlivesItsGrantsExpiryButNotItsRevocation() throws Exception {
        try (TestStack stack = TestStack.start(tmp, new SimpleMeterRegistry(), c -> new GatewayConfig(
                c.environment(), c.listen(), c.path(), c.mux(), noSkew(c.verifierPolicy()), c.targetPolicy(),
                c.dialTimeout(), c.handshakeTimeout(), c.drainTimeout(), c.ioThreads(), c.limits()))) {
            String grant = stack.issuer.issueGrant(GrantSpec.tcp(TestStack.ENV, "default", "localhost",
                    stack.app.port()), Duration.ofSeconds(3));
            UnverifiedGrantView view = UnverifiedGrantView.decode(grant);
            RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token", stack.token(),
                    "--grant", grant, "--state-dir", tmp.resolve("state").toString(), "--pool", "1", "--no-control");
            try {
                JsonNode ready = running.readyLine();
                String target = "localhost:" + stack.app.port();
                try (Socket tunnel = new Socket()) {
                    tunnel.setSoTimeout(20_000);
                    InetSocketAddress proxy = IngressCliHarness.proxyAddress(ready);
                    tunnel.connect(proxy);
                    OutputStream out = tunnel.getOutputStream();
                    InputStream in = tunnel.getInputStream();
                    out.write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
                            + IngressCliHarness.proxyAuthorization(ready) + "\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
                    assertTrue(IngressCliHarness.readHead(in).startsWith("HTTP/1.1 200"), "tunnel opened");
                    assertEquals(SampleApp.HELLO_BODY, hello(out, in, target), "before expiry");

                    Await.until("the grant expired", Duration.ofSeconds(30),
                            () -> Instant.now().isAfter(view.expiresAt().plusMillis(500)));
                    assertEquals(SampleApp.HELLO_BODY, hello(out, in, target),
                            "the live stream outlives its grant's expiry");

                    try (Socket fresh = new Socket()) {
                        fresh.setSoTimeout(20_000);
                        fresh.connect(proxy);
                        fresh.getOutputStream().write(("GET http://" + target + "/hello HTTP/1.1\r\nHost: " + target
                                + "\r\n" + IngressCliHarness.proxyAuthorization(ready)
                                + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                        String head = IngressCliHarness.readHead(fresh.getInputStream());
                        assertNotEquals("HTTP/1.1 200", head.substring(0, Math.min(12, head.length())),
                                "a new stream with the expired grant is refused: " + head);
                    }

                    assertEquals(1, stack.gateway.revocations().revokeGrant(view.jti()),
                            "revocation finds the live stream");
                    tunnel.setSoTimeout(5_000);
                    assertEquals(-1, readOrEnd(in), "revocation ends the live stream at once");
                }
            } finally {
                running.close();
            }
            assertEquals(0, running.awaitExit());
        }
    }

    private static VerifierPolicy noSkew(VerifierPolicy p) {
        return new VerifierPolicy(Duration.ZERO, p.maxGrantLifetime(), p.maxTokenLifetime(), p.maxTokenLength());
    }

    /** One keep-alive GET /hello inside the tunnel; returns the body. */
    private static String hello(OutputStream out, InputStream in, String target) throws IOException {
        out.write(("GET /hello HTTP/1.1\r\nHost: " + target + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        String head = IngressCliHarness.readHead(in);
        assertTrue(head.startsWith("HTTP/1.1 200"), head);
        int length = -1;
        for (String line : head.split("\r\n")) {
            if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        assertTrue(length >= 0, "a sized answer: " + head);
        return new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }

    /** The next byte, -1 at the end (or a reset), -2 when the socket timeout passed with the stream still open. */
    private static int readOrEnd(InputStream in) {
        try {
            return in.read();
        } catch (java.net.SocketTimeoutException stillOpen) {
            return -2;
        } catch (IOException reset) {
            return -1;
        }
    }
}
