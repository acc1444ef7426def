package dev.previewtunnel.spikes.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.ingress.ssh.GatewayControl;
import dev.previewtunnel.ingress.ssh.IssuedGrant;
import dev.previewtunnel.ingress.ssh.SshLink;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.ssh.SshLab;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What {@code open} builds on: an {@link SshLink} to the lab's sshd mints a token and a grant on the remote over
 * the gateway's stdio control channel, and {@code desktop-ingress run --gateway <the link's URI>} serves a 1 MiB
 * download from a target on the remote's loopback through the forward to the gateway's Unix socket.
 */
class SshLinkTunnelTest {
    private static final Duration CLI = Duration.ofSeconds(60);
    @TempDir
    Path dir;

    @AfterAll
    static void deleteState() throws Exception {
        CliProcess.deleteStateHome();
    }

    @Test
    @Timeout(240)
    void aDownloadReachesTheRemoteTargetWithWhatTheLinkMinted() throws Exception {
        try (SampleApp app = SampleApp.start("127.0.0.1", 0);
             SshLab remote = SshLab.start(dir);
             SshLink link = remote.link("t-tunnel", null, dir.resolve("desktop"), new SshLink.Listener() {
                 @Override
                 public void up(GatewayControl control) {
                 }

                 @Override
                 public void down(String why) {
                 }
             })) {
            link.firstUp().get(120, TimeUnit.SECONDS);
            String token = link.control().token(Duration.ofHours(1)).get(30, TimeUnit.SECONDS);
            IssuedGrant grant = link.control().grant("default", "localhost:" + app.port(), Duration.ofMinutes(10))
                    .get(30, TimeUnit.SECONDS);
            try (CliProcess ingress = CliProcess.start("desktop-ingress", "run",
                    "--gateway", link.gatewayUri().toString(),
                    "--token-file", secret("token", token).toString(),
                    "--grant-file", secret("grant", grant.jwt()).toString(),
                    "--state-dir", dir.resolve("ingress").toString(), "--listen", "127.0.0.1:0")) {
                JsonNode ready = ingress.awaitReady(CLI);
                CliTunnel.assertPatternDownload(CliTunnel.proxiedClient(ready), app.port(), 1024 * 1024);
                ingress.process.destroy(); // SIGTERM
                assertEquals(0, ingress.awaitExit(Duration.ofSeconds(30)), ingress::stderr);
            }
        }
    }

    private Path secret(String name, String content) throws Exception {
        Path file = dir.resolve(name);
        Files.writeString(file, content + "\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        return file;
    }
}
