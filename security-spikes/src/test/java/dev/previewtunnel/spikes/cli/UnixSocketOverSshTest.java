package dev.previewtunnel.spikes.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.cli.CliTunnel.Secrets;
import dev.previewtunnel.spikes.lab.LabProcess;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.lab.Sshd;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Comparator;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The gateway listening on nothing but a Unix socket (issue 19, item 3): {@code env-gateway serve --listen
 * unix:PATH}, the lab's real sshd, {@code ssh -N -L 127.0.0.1:PORT:PATH} on the desktop side and
 * {@code desktop-ingress run --gateway ws://127.0.0.1:PORT/tunnel}; a request through the proxy is served by the
 * target end to end, and sshd's own log shows the tunnel arrived as a stream local forward to the socket.
 */
class UnixSocketOverSshTest {
    private static final Duration CLI = Duration.ofSeconds(60);
    static SampleApp app;
    static Path dir;
    static Secrets secrets;

    @BeforeAll
    static void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        dir = Files.createTempDirectory("ptun-unixssh");
        secrets = Secrets.issue(dir, "e", "localhost:" + app.port());
    }

    @AfterAll
    static void stop() throws Exception {
        app.close();
        CliProcess.deleteStateHome();
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    @Test
    @Timeout(180)
    void aRequestReachesItsTargetThroughSshToTheGatewaysSocket() throws Exception {
        Path socket = dir.resolve("run").resolve("gw.sock");
        Path sshDir = Files.createDirectory(dir.resolve("ssh"));
        try (CliProcess gateway = CliProcess.start("env-gateway", "serve", "--keys", secrets.keys().toString(),
                "--env", "e", "--listen", "unix:" + socket);
             Sshd sshd = Sshd.start(sshDir, "DEBUG1")) {
            JsonNode gatewayReady = gateway.awaitReady(CLI);
            assertEquals("unix:" + socket, gatewayReady.get("listen").asText(), gatewayReady::toString);
            assertNull(gatewayReady.get("url"), "nothing to dial but the socket: " + gatewayReady);
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));

            int local = Processes.freePort();
            try (LabProcess ssh = sshd.forwardToSocket("ssh", local, socket);
                 CliProcess ingress = CliProcess.start("desktop-ingress", "run",
                         "--gateway", "ws://127.0.0.1:" + local + "/tunnel",
                         "--token-file", secrets.token().toString(), "--grant-file", secrets.grant().toString(),
                         "--state-dir", dir.resolve("ingress").toString(), "--listen", "127.0.0.1:0")) {
                JsonNode ready = ingress.awaitReady(CLI);
                HttpClient client = CliTunnel.proxiedClient(ready);
                long size = 1024 * 1024;
                HttpResponse<InputStream> r = client.send(HttpRequest.newBuilder(
                                URI.create("http://localhost:" + app.port() + "/bytes?n=" + size)).timeout(CLI).build(),
                        HttpResponse.BodyHandlers.ofInputStream());
                assertEquals(200, r.statusCode());
                CRC32 crc = new CRC32();
                long n = 0;
                try (InputStream in = r.body()) {
                    byte[] buf = new byte[64 * 1024];
                    for (int k; (k = in.read(buf)) > 0; n += k) {
                        crc.update(buf, 0, k);
                    }
                }
                assertEquals(size, n);
                assertEquals(SampleApp.patternCrc(size).getValue(), crc.getValue());
                String sshdLog = Files.readString(sshd.log());
                assertTrue(sshdLog.contains("server_request_direct_streamlocal") && sshdLog.contains(socket.toString()),
                        "sshd forwarded to the socket: " + sshd.process().tail(2000));

                ingress.process.destroy(); // SIGTERM
                assertEquals(0, ingress.awaitExit(Duration.ofSeconds(30)), ingress::stderr);
            }
            gateway.process.destroy(); // SIGTERM
            assertEquals(0, gateway.awaitExit(Duration.ofSeconds(30)), gateway::stderr);
            assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the socket file is removed at stop");
        }
    }
}
