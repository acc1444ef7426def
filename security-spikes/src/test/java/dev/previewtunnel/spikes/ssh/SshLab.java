package dev.previewtunnel.spikes.ssh;

import dev.previewtunnel.ingress.ssh.GatewayJar;
import dev.previewtunnel.ingress.ssh.RemoteSetup;
import dev.previewtunnel.ingress.ssh.SshDestination;
import dev.previewtunnel.ingress.ssh.SshLink;
import dev.previewtunnel.ingress.ssh.SshOptions;
import dev.previewtunnel.spikes.lab.Sshd;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The lab's sshd as a "remote" for {@link SshLink}: this machine, with fresh XDG cache/state/runtime directories
 * under {@code dir/remote} given to every session (sshd SetEnv), so a test never touches the real home.
 */
public final class SshLab implements AutoCloseable {
    private final Sshd sshd;
    private final Path remote;

    private SshLab(Sshd sshd, Path remote) {
        this.sshd = sshd;
        this.remote = remote;
    }

    public static SshLab start(Path dir) throws IOException {
        Path remote = Files.createDirectory(dir.resolve("remote"));
        Map<String, String> env = Map.of("XDG_CACHE_HOME", remote.resolve("cache").toString(),
                "XDG_STATE_HOME", remote.resolve("state").toString(),
                "XDG_RUNTIME_DIR", Files.createDirectory(remote.resolve("run")).toString());
        return new SshLab(Sshd.start(Files.createDirectory(dir.resolve("sshd")), "INFO", env), remote);
    }

    /** A link to this sshd's user with its key; {@code remoteJava} null: java from the session's PATH. */
    public SshLink link(String version, String remoteJava, Path stateDir, SshLink.Listener listener) {
        return SshLink.start(destination(), options(), new RemoteSetup(remoteJava, null, GatewayJar.locate(null),
                version, "e"), stateDir, listener);
    }

    public SshDestination destination() {
        return new SshDestination(sshd.user(), "127.0.0.1", sshd.port());
    }

    /** {@link Sshd#sshClientScript()} (no ~/.ssh/config), the authorized key, no prompts, known hosts of its own. */
    public SshOptions options() {
        return new SshOptions(sshd.sshClientScript(), sshd.userKey(), sshd.clientOptions());
    }

    /** The remote's {@code XDG_CACHE_HOME}. */
    public Path remoteCache() {
        return remote.resolve("cache");
    }

    public Sshd sshd() {
        return sshd;
    }

    @Override
    public void close() {
        sshd.close();
    }
}
