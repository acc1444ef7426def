package dev.previewtunnel.spikes.e2e;

import dev.previewtunnel.spikes.lab.LabProcess;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.lab.Sshd;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The SSH-environment shape: the lab's real {@link Sshd} and {@code ssh -N -L} carrying the ingress → gateway
 * WebSocket. Everything lives in a temporary directory; both process trees are destroyed and it is deleted on close.
 */
public final class SshRelay implements AutoCloseable {
    private final Sshd sshd;
    private final LabProcess ssh;
    private final Path dir;
    private final int localPort;
    private final int gatewayPort;

    private SshRelay(Sshd sshd, LabProcess ssh, Path dir, int localPort, int gatewayPort) {
        this.sshd = sshd;
        this.ssh = ssh;
        this.dir = dir;
        this.localPort = localPort;
        this.gatewayPort = gatewayPort;
    }

    public static SshRelay start(int gatewayPort) {
        Path dir;
        try {
            dir = Files.createTempDirectory("ptun-ssh");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Sshd sshd = null;
        try {
            // DEBUG1: sshd logs each forwarded connection (forwardsToGatewayLogged).
            sshd = Sshd.start(dir, "DEBUG1");
            int localPort = Processes.freePort();
            LabProcess ssh = sshd.forward("ssh", List.of(localPort), List.of(gatewayPort));
            return new SshRelay(sshd, ssh, dir, localPort, gatewayPort);
        } catch (RuntimeException | Error e) {
            if (sshd != null) {
                sshd.close();
            }
            Processes.deleteTree(dir);
            throw e;
        }
    }

    /**
     * How many forwarded connections to the gateway sshd has opened: its log lines
     * {@code server_request_direct_tcpip: originator ..., target 127.0.0.1 port GW} (LogLevel DEBUG1), written as
     * each {@code ssh -L} connection arrives.
     */
    public long forwardsToGatewayLogged() {
        Path log = sshd.log();
        try {
            if (!Files.exists(log)) {
                return 0;
            }
            try (var lines = Files.lines(log)) {
                Pattern target = Pattern.compile(
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
        return Sshd.clientVersion();
    }

    @Override
    public void close() {
        ssh.close();
        sshd.close();
        Processes.deleteTree(dir);
    }
}
