package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.DoctorReport.Status;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.mux.client.TunnelProbe;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the gateway check says about listeners that are not a gateway (real loopback sockets; the gateway's own
 * answers are covered by IngressDoctorTest against a real one): a program answering HTTP, one that accepts and
 * stays silent. Neither gets a token check, and nothing is accepted to open targets through.
 */
class GatewayCheckTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(1);

    private static List<DoctorReport.Check> check(int port, TunnelProbe probe) {
        DoctorReport report = Reports.quiet();
        GatewayTunnel tunnel = new GatewayCheck(GatewayLabel.DEFAULT, URI.create("ws://127.0.0.1:" + port + "/tunnel"),
                "token-value", null, () -> null, probe, TIMEOUT).run(report);
        assertFalse(tunnel.accepted());
        return report.checks();
    }

    @Test
    void aProgramAnsweringHttpIsNotAGateway() throws Exception {
        try (ServerSocket web = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             TunnelProbe probe = new TunnelProbe(Duration.ofSeconds(5), Clock.systemUTC())) {
            CompletableFuture<Void> answered = CompletableFuture.runAsync(() -> {
                try (Socket s = web.accept()) {
                    InputStream in = s.getInputStream();
                    int matched = 0;
                    while (matched < 4) { // the request head, up to its blank line
                        int b = in.read();
                        if (b < 0) {
                            return;
                        }
                        matched = (b == '\r' || b == '\n') ? matched + 1 : 0;
                    }
                    OutputStream out = s.getOutputStream();
                    out.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi".getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    s.getInputStream().read(); // until the probe closes
                } catch (IOException e) {
                    // the probe closed first
                }
            });
            List<DoctorReport.Check> checks = check(web.getLocalPort(), probe);
            answered.get(10, TimeUnit.SECONDS);
            assertEquals(2, checks.size(), checks::toString); // gateway, then clock (no Date header: a warning)
            DoctorReport.Check gateway = checks.get(0);
            assertEquals(Status.FAIL, gateway.status());
            assertEquals(ExitCodes.REFUSED, gateway.exitCode());
            assertEquals("127.0.0.1:" + web.getLocalPort() + " answered HTTP 200 to a tunnel upgrade: it is not a "
                    + "preview-tunnel gateway (wrong port or forward?)", gateway.message());
            assertEquals("clock", checks.get(1).id());
            assertEquals(Status.WARN, checks.get(1).status());
        }
    }

    @Test
    void aSilentListenerDidNotAnswer() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             TunnelProbe probe = new TunnelProbe(TIMEOUT, Clock.systemUTC())) {
            List<DoctorReport.Check> checks = check(silent.getLocalPort(), probe);
            assertEquals(1, checks.size(), checks::toString);
            assertEquals(ExitCodes.UNREACHABLE, checks.get(0).exitCode());
            assertTrue(checks.get(0).message().startsWith("the gateway at 127.0.0.1:" + silent.getLocalPort()
                    + " did not answer within 1 s"), checks.get(0).message());
        }
    }

    /** wss:// to a listener that answers in clear text: the TLS handshake fails, and the fix is about trust. */
    @Test
    void aWssGatewayWhoseTlsFailsSaysSo() throws Exception {
        try (ServerSocket plain = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             TunnelProbe probe = new TunnelProbe(Duration.ofSeconds(5), Clock.systemUTC())) {
            CompletableFuture<Void> server = CompletableFuture.runAsync(() -> {
                try (Socket s = plain.accept()) {
                    s.getOutputStream().write("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                    s.getOutputStream().flush();
                    s.getInputStream().read(); // until the probe closes
                } catch (IOException e) {
                    // the probe closed first
                }
            });
            SslContext client = SslContextBuilder.forClient().build();
            DoctorReport report = Reports.quiet();
            GatewayTunnel tunnel = new GatewayCheck(GatewayLabel.DEFAULT, URI.create("wss://127.0.0.1:"
                    + plain.getLocalPort() + "/tunnel"), "token-value", null, () -> client, probe, TIMEOUT).run(report);
            server.get(10, TimeUnit.SECONDS);
            assertFalse(tunnel.accepted());
            DoctorReport.Check c = Reports.only(report);
            assertEquals(ExitCodes.REFUSED, c.exitCode(), c::toString);
            assertTrue(c.message().startsWith("TLS with the gateway at 127.0.0.1:" + plain.getLocalPort() + " failed (")
                    && c.message().endsWith("trust its CA with --gateway-ca PEM, and check its certificate names "
                    + "127.0.0.1"), c.message());
            assertFalse(c.message().contains("token-value"), c.message());
        }
    }

    /** A CA file that cannot be used is the gateway check's failure; nothing is dialed. */
    @Test
    void aTlsSetupThatFailsIsReportedWithoutDialing() {
        DoctorReport report = Reports.quiet();
        try (TunnelProbe probe = new TunnelProbe(TIMEOUT, Clock.systemUTC())) {
            new GatewayCheck(new GatewayLabel("staging"), URI.create("wss://127.0.0.1:1/tunnel"), null, null,
                    () -> {
                        throw new IllegalStateException("cannot load --gateway-ca ca.pem: not a certificate");
                    }, probe, TIMEOUT).run(report);
        }
        DoctorReport.Check c = Reports.only(report);
        assertEquals("environment-gateway", c.id());
        assertEquals("cannot set up TLS for the gateway of environment 'staging' at 127.0.0.1:1: cannot load "
                + "--gateway-ca ca.pem: not a certificate", c.message());
    }
}
