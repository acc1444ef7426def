package dev.previewtunnel.spikes.ssh;

import dev.previewtunnel.ingress.ssh.GatewayControl;
import dev.previewtunnel.ingress.ssh.GatewayJar;
import dev.previewtunnel.ingress.ssh.SshLink;
import dev.previewtunnel.spikes.lab.Processes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A remote with {@code env-gateway} on its PATH runs that (nothing uploaded), unless {@code --remote-java} asks for
 * the jar: the lab's sshd gives its sessions a PATH whose first directory holds an {@code env-gateway} script.
 */
class SshLinkRemotePathTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(300)
    void envGatewayOnTheRemotePathIsUsedUnlessRemoteJavaIsGiven() throws Exception {
        Path bin = Files.createDirectory(dir.resolve("bin"));
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path script = bin.resolve("env-gateway");
        Path ran = dir.resolve("env-gateway-ran");
        Files.writeString(script, "#!/bin/sh\ntouch '" + ran + "'\nexec '" + java + "' -jar '"
                + GatewayJar.locate(null) + "' \"$@\"\n");
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwx------"));
        try (SshLab remote = SshLab.start(dir, Map.of("PATH", bin + ":/usr/local/bin:/usr/bin:/bin"))) {
            try (SshLink link = remote.link("t-path", null, dir.resolve("desktop-path"), new Quiet())) {
                link.firstUp().get(120, TimeUnit.SECONDS);
                assertEquals(3, link.control().token(Duration.ofMinutes(5)).get(30, TimeUnit.SECONDS)
                        .split("\\.").length);
                assertTrue(Files.exists(ran), "the remote's env-gateway ran");
                assertFalse(Files.exists(remote.remoteCache().resolve("preview-tunnel/t-path")), "nothing uploaded");
                String socket = link.remoteSocket();
                link.close();
                assertTrue(Processes.within(Duration.ofSeconds(20), () -> SshLab.remoteGatewaysAt(socket).isEmpty()));
            }
            Files.delete(ran);
            try (SshLink link = remote.link("t-path", java.toString(), dir.resolve("desktop-java"), new Quiet())) {
                link.firstUp().get(120, TimeUnit.SECONDS);
                assertFalse(Files.exists(ran), "--remote-java: the jar, not the PATH's env-gateway");
                assertTrue(Files.exists(remote.remoteCache().resolve("preview-tunnel/t-path/env-gateway.jar")));
            }
            assertTrue(Processes.within(Duration.ofSeconds(10), () -> SshLab.sshChildren().isEmpty()),
                    () -> "no ssh child left: " + SshLab.sshChildren());
        }
    }

    private static final class Quiet implements SshLink.Listener {
        @Override
        public void up(GatewayControl control) {
        }

        @Override
        public void down(String why) {
        }
    }
}
