package dev.previewtunnel.spikes.e2e;

import dev.previewtunnel.spikes.browser.Processes;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The SSH-environment shape: a real {@code sshd} (Debian's OpenSSH) on a loopback port with a generated host key
 * and a generated user key, and {@code ssh -N -L} carrying the ingress → gateway WebSocket. Everything lives in a
 * temporary directory; both process trees are destroyed on close.
 */
public final class SshRelay implements AutoCloseable {
    private final Process sshd;
    private final Process ssh;
    private final Path dir;
    private final int localPort;
    private final int gatewayPort;

    private SshRelay(Process sshd, Process ssh, Path dir, int localPort, int gatewayPort) {
        this.sshd = sshd;
        this.ssh = ssh;
        this.dir = dir;
        this.localPort = localPort;
        this.gatewayPort = gatewayPort;
    }

    public static SshRelay start(int gatewayPort) {
        Path sshdBin = Processes.require("/usr/sbin/sshd", "apt-get install openssh-server");
        Path sshBin = Processes.require("ssh", "apt-get install openssh-client");
        Path keygen = Processes.require("ssh-keygen", "apt-get install openssh-client");
        Path dir;
        try {
            dir = Files.createTempDirectory("ptun-ssh");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Process sshd = null;
        Process ssh = null;
        try {
            Processes.runOk(List.of(keygen.toString(), "-q", "-t", "ed25519", "-N", "", "-C", "ptun-host",
                    "-f", dir.resolve("host_ed25519").toString()), dir, Duration.ofSeconds(30));
            Processes.runOk(List.of(keygen.toString(), "-q", "-t", "ed25519", "-N", "", "-C", "ptun-user",
                    "-f", dir.resolve("user_ed25519").toString()), dir, Duration.ofSeconds(30));
            Files.copy(dir.resolve("user_ed25519.pub"), dir.resolve("authorized_keys"));
            String user = System.getProperty("user.name");
            if ("root".equals(user)) {
                // sshd started as root insists on its privilege-separation directory (the ssh service makes it).
                Files.createDirectories(Path.of("/run/sshd"));
            }
            int sshPort = -1;
            Path sshdLog = dir.resolve("sshd.log");
            for (int attempt = 0; attempt < 3 && sshd == null; attempt++) {
                int port = Processes.freePort();
                Path conf = dir.resolve("sshd_config");
                Files.writeString(conf, sshdConfig(dir, port));
                Process p = Processes.start(Processes.builder(List.of(sshdBin.toString(), "-D", "-e", "-f",
                        conf.toString()), sshdLog));
                try {
                    Processes.awaitPort("127.0.0.1", port, Duration.ofSeconds(20), p, sshdLog);
                    sshd = p;
                    sshPort = port;
                } catch (AssertionError e) {
                    Processes.destroyTree(p);
                    if (attempt == 2) {
                        throw e;
                    }
                }
            }
            int localPort = Processes.freePort();
            Path sshLog = dir.resolve("ssh.log");
            ssh = Processes.start(Processes.builder(List.of(sshBin.toString(), "-N", "-F", "/dev/null",
                    "-i", dir.resolve("user_ed25519").toString(), "-p", String.valueOf(sshPort),
                    "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                    "-o", "StrictHostKeyChecking=accept-new",
                    "-o", "UserKnownHostsFile=" + dir.resolve("known_hosts"),
                    "-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=15",
                    "-L", "127.0.0.1:" + localPort + ":127.0.0.1:" + gatewayPort,
                    user + "@127.0.0.1"), sshLog));
            Process sshProcess = ssh;
            try {
                Processes.awaitPort("127.0.0.1", localPort, Duration.ofSeconds(30), sshProcess, sshLog);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; sshd: " + Processes.tail(sshdLog, 2000), e);
            }
            return new SshRelay(sshd, ssh, dir, localPort, gatewayPort);
        } catch (IOException e) {
            Processes.destroyTree(ssh);
            Processes.destroyTree(sshd);
            Processes.deleteTree(dir);
            throw new UncheckedIOException(e);
        } catch (RuntimeException | Error e) {
            Processes.destroyTree(ssh);
            Processes.destroyTree(sshd);
            Processes.deleteTree(dir);
            throw e;
        }
    }

    static String sshdConfig(Path dir, int port) {
        return """
                Port %2$d
                ListenAddress 127.0.0.1
                HostKey %1$s/host_ed25519
                PidFile %1$s/sshd.pid
                AuthorizedKeysFile %1$s/authorized_keys
                UsePAM no
                StrictModes no
                PermitRootLogin prohibit-password
                PubkeyAuthentication yes
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                AllowTcpForwarding local
                X11Forwarding no
                PrintMotd no
                LogLevel DEBUG1
                """.formatted(dir, port);
    }

    /**
     * How many forwarded connections to the gateway sshd has opened: its log lines
     * {@code server_request_direct_tcpip: originator ..., target 127.0.0.1 port GW} (LogLevel DEBUG1), written as
     * each {@code ssh -L} connection arrives.
     */
    public long forwardsToGatewayLogged() {
        Path log = dir.resolve("sshd.log");
        try {
            if (!Files.exists(log)) {
                return 0;
            }
            try (var lines = Files.lines(log)) {
                java.util.regex.Pattern target = java.util.regex.Pattern.compile(
                        "server_request_direct_tcpip: originator .*target 127\\.0\\.0\\.1 port " + gatewayPort + "\\b");
                return lines.filter(l -> target.matcher(l).find()).count();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The gateway URL the ingress dials: the local end of {@code ssh -L}. */
    public URI gatewayUrl() {
        return URI.create("ws://127.0.0.1:" + localPort + "/tunnel");
    }

    public String version() {
        return Processes.run(List.of(Processes.find("ssh").toString(), "-V"), null, Duration.ofSeconds(10))
                .output().trim();
    }

    @Override
    public void close() {
        Processes.destroyTree(ssh);
        Processes.destroyTree(sshd);
        Processes.deleteTree(dir);
    }
}
