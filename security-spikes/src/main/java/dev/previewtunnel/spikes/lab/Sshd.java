package dev.previewtunnel.spikes.lab;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A real {@code sshd} (Debian's OpenSSH) on a loopback port, with a host key and a user key generated into its own
 * directory (the user key is the only authorized one), and {@code ssh -N -L} clients forwarding through it (to TCP
 * ports or Unix sockets). The caller owns the directory; {@link #close()} stops sshd (each forward is a
 * {@link LabProcess} of its own).
 */
public final class Sshd implements AutoCloseable {
    private static final int ATTEMPTS = 3;

    private final LabProcess process;
    private final Path dir;
    private final int port;
    private final String user = System.getProperty("user.name");

    private Sshd(LabProcess process, Path dir, int port) {
        this.process = process;
        this.dir = dir;
        this.port = port;
    }

    /**
     * Generates the keys, writes the config and starts sshd on a free port (a few attempts: the port is picked
     * before sshd binds it). {@code logLevel} is sshd's LogLevel (DEBUG1 logs each forwarded connection).
     */
    public static Sshd start(Path dir, String logLevel) {
        return start(dir, logLevel, Map.of());
    }

    /**
     * As {@link #start(Path, String)}, and every session gets {@code sessionEnv} (sshd_config {@code SetEnv}; values
     * without whitespace), e.g. {@code XDG_CACHE_HOME}, {@code XDG_STATE_HOME} and {@code XDG_RUNTIME_DIR} pointing
     * at fresh directories, so a test's remote side never touches the real home.
     */
    public static Sshd start(Path dir, String logLevel, Map<String, String> sessionEnv) {
        Path sshd = Processes.require("/usr/sbin/sshd", "apt-get install openssh-server");
        Path keygen = Processes.require("ssh-keygen", "apt-get install openssh-client");
        Processes.require("ssh", "apt-get install openssh-client");
        try {
            for (String key : List.of("host", "user")) {
                Processes.runOk(List.of(keygen.toString(), "-q", "-t", "ed25519", "-N", "", "-C", "ptun-" + key,
                        "-f", dir.resolve(key + "_ed25519").toString()), dir, Duration.ofSeconds(30));
            }
            Files.copy(dir.resolve("user_ed25519.pub"), dir.resolve("authorized_keys"));
            if ("root".equals(System.getProperty("user.name"))) {
                // sshd started as root insists on its privilege-separation directory (the ssh service makes it).
                Files.createDirectories(Path.of("/run/sshd"));
            }
            for (int attempt = 1; ; attempt++) {
                int port = Processes.freePort();
                Path conf = dir.resolve("sshd_config");
                Files.writeString(conf, config(dir, port, logLevel) + setEnv(sessionEnv));
                LabProcess p = LabProcess.start("sshd", List.of(sshd.toString(), "-D", "-e", "-f", conf.toString()),
                        dir, null);
                try {
                    p.awaitPort(port, Duration.ofSeconds(20));
                    return new Sshd(p, dir, port);
                } catch (AssertionError | RuntimeException e) {
                    p.close();
                    if (attempt == ATTEMPTS) {
                        throw e;
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String config(Path dir, int port, String logLevel) {
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
                LogLevel %3$s
                """.formatted(dir, port, logLevel);
    }

    private static String setEnv(Map<String, String> env) {
        if (env.isEmpty()) {
            return "";
        }
        StringBuilder line = new StringBuilder("SetEnv");
        env.forEach((k, v) -> {
            if (!k.matches("[A-Za-z_][A-Za-z0-9_]*") || v.isEmpty() || v.matches(".*[\\s\"'].*")) {
                throw new IllegalArgumentException("SetEnv takes NAME=VALUE without whitespace or quotes: " + k);
            }
            line.append(' ').append(k).append('=').append(v);
        });
        return line.append('\n').toString();
    }

    /**
     * An executable script in this server's directory running {@code ssh -F /dev/null "$@"}: a client for code
     * that takes an ssh binary (desktop-ingress open's SshLink) and must not read the user's ~/.ssh/config.
     */
    public Path sshClientScript() {
        Path script = dir.resolve("ssh-client");
        try {
            if (!Files.exists(script)) {
                Files.writeString(script, "#!/bin/sh\nexec " + Processes.find("ssh") + " -F /dev/null \"$@\"\n");
                Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwx------"));
            }
            return script;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The user key {@link #ssh} authenticates with. */
    public Path userKey() {
        return dir.resolve("user_ed25519");
    }

    /** The {@code -o KEY=VALUE} values of {@link #ssh} after its identity: key only, no prompt, own known hosts. */
    public List<String> clientOptions() {
        return List.of("IdentitiesOnly=yes", "BatchMode=yes", "StrictHostKeyChecking=accept-new",
                "UserKnownHostsFile=" + dir.resolve("known_hosts"));
    }

    /** The login name {@link #destination()} uses. */
    public String user() {
        return user;
    }

    /** {@code ssh} with {@code flags}, this server's user key, port and a known-hosts file of its own. */
    public List<String> ssh(List<String> flags) {
        List<String> cmd = new ArrayList<>(List.of(Processes.find("ssh").toString()));
        cmd.addAll(flags);
        cmd.addAll(List.of("-F", "/dev/null", "-i", userKey().toString(), "-p", String.valueOf(port)));
        for (String option : clientOptions()) {
            cmd.addAll(List.of("-o", option));
        }
        return cmd;
    }

    /** The login name and host for {@link #ssh}'s command line. */
    public String destination() {
        return user + "@127.0.0.1";
    }

    /**
     * {@code ssh -N} forwarding {@code 127.0.0.1:local[i]} to {@code 127.0.0.1:targets[i]} through this server;
     * returns once every local port accepts connections (with sshd's log in the failure message otherwise).
     */
    public LabProcess forward(String name, List<Integer> local, List<Integer> targets) {
        List<String> specs = new ArrayList<>();
        for (int i = 0; i < local.size(); i++) {
            specs.add("127.0.0.1:" + local.get(i) + ":127.0.0.1:" + targets.get(i));
        }
        return forwardSpecs(name, local, specs);
    }

    /**
     * {@code ssh -N -L 127.0.0.1:local:SOCKET}: a stream local forward to the Unix socket {@code socket} on this
     * server's side (sshd's AllowStreamLocalForwarding, on by default); returns once the local port accepts.
     */
    public LabProcess forwardToSocket(String name, int local, Path socket) {
        return forwardSpecs(name, List.of(local), List.of("127.0.0.1:" + local + ":" + socket));
    }

    private LabProcess forwardSpecs(String name, List<Integer> local, List<String> specs) {
        List<String> cmd = ssh(List.of("-N"));
        cmd.addAll(List.of("-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=15"));
        for (String spec : specs) {
            cmd.addAll(List.of("-L", spec));
        }
        cmd.add(destination());
        LabProcess ssh = LabProcess.start(name, cmd, dir, null);
        try {
            for (int lp : local) {
                ssh.awaitPort(lp, Duration.ofSeconds(30));
            }
            return ssh;
        } catch (AssertionError | RuntimeException e) {
            ssh.close();
            throw new AssertionError(e.getMessage() + "; sshd: " + process.tail(2000), e);
        }
    }

    public int port() {
        return port;
    }

    public LabProcess process() {
        return process;
    }

    /** sshd's own log ({@code -e}: everything it logs at its LogLevel). */
    public Path log() {
        return process.log();
    }

    /** The OpenSSH client's version line ({@code ssh -V}). */
    public static String clientVersion() {
        return Processes.run(List.of(Processes.require("ssh", "apt-get install openssh-client").toString(), "-V"),
                null, Duration.ofSeconds(10)).output().trim();
    }

    @Override
    public void close() {
        process.close();
    }
}
