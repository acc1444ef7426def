package dev.previewtunnel.spikes.ssh;

import dev.previewtunnel.ingress.ssh.GatewayJar;
import dev.previewtunnel.ingress.ssh.RemoteSetup;
import dev.previewtunnel.ingress.ssh.SshDestination;
import dev.previewtunnel.ingress.ssh.SshLink;
import dev.previewtunnel.ingress.ssh.SshOptions;
import dev.previewtunnel.spikes.lab.Sshd;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
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
        return start(dir, Map.of());
    }

    /** As {@link #start(Path)}, with more session environment (e.g. a PATH). */
    public static SshLab start(Path dir, Map<String, String> moreEnv) throws IOException {
        Path remote = Files.createDirectory(dir.resolve("remote"));
        Map<String, String> env = new HashMap<>(moreEnv);
        env.putAll(Map.of("XDG_CACHE_HOME", remote.resolve("cache").toString(),
                "XDG_STATE_HOME", remote.resolve("state").toString(),
                "XDG_RUNTIME_DIR", Files.createDirectory(remote.resolve("run")).toString()));
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

    /** The ssh clients among this JVM's descendants (sshd and its sessions are descendants too, but not "ssh"). */
    public static List<ProcessHandle> sshChildren() {
        return ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
                .filter(p -> p.info().command().map(c -> c.endsWith("/ssh")).orElse(false)).toList();
    }

    /** Processes whose command line names {@code socket}, but the local ssh client: the remote gateway serving it. */
    public static List<Long> remoteGatewaysAt(String socket) {
        return ProcessHandle.allProcesses().filter(ProcessHandle::isAlive)
                .filter(p -> !p.info().command().map(c -> c.endsWith("/ssh")).orElse(false)).filter(p -> {
            try {
                byte[] cmdline = Files.readAllBytes(Path.of("/proc", String.valueOf(p.pid()), "cmdline"));
                return new String(cmdline, StandardCharsets.UTF_8).contains("unix:" + socket);
            } catch (IOException e) {
                return false;
            }
        }).map(ProcessHandle::pid).toList();
    }

    @Override
    public void close() {
        sshd.close();
    }
}
