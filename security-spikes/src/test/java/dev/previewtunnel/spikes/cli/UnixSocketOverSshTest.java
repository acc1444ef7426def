package dev.previewtunnel.spikes.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.cli.CliTunnel.Secrets;
import dev.previewtunnel.spikes.lab.LabProcess;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.lab.Sshd;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;

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
    @TempDir
    Path dir;

    @AfterAll
    static void deleteState() throws Exception {
        CliProcess.deleteStateHome();
    }

    @Test
    @Timeout(180)
    void aRequestReachesItsTargetThroughSshToTheGatewaysSocket() throws Exception {
        try (SampleApp app = SampleApp.start("127.0.0.1", 0)) {
            throughSsh(app, Secrets.issue(dir, "e", "localhost:" + app.port()));
        }
    }

    private void throughSsh(SampleApp app, Secrets secrets) throws Exception {
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
                CliTunnel.assertPatternDownload(CliTunnel.proxiedClient(ready), app.port(), 1024 * 1024);
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
