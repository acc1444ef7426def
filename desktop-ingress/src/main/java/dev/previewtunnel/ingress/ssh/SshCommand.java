package dev.previewtunnel.ingress.ssh;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code ssh} command lines of one link: a ControlMaster that authenticates once, and every other command
 * through its control socket. ssh takes the first value it sees for an option, so the options the link depends on
 * come first, then the user's {@code --ssh-option}s, then defaults the user may override. {@code -S} always wins
 * over a config's ControlPath, and {@code ControlMaster=no} keeps a command from becoming a master (and
 * authenticating anew) when the socket is gone.
 */
final class SshCommand {
    private final String ssh;
    private final SshDestination dest;
    private final SshOptions options;
    private final Path controlPath;
    private final boolean batch;

    /** {@code batch}: no terminal to prompt on, so ssh fails with a line instead of waiting for an answer. */
    SshCommand(SshDestination dest, SshOptions options, Path controlPath, boolean batch) {
        this.ssh = options.sshBinary() == null ? "ssh" : options.sshBinary().toString();
        this.dest = dest;
        this.options = options;
        this.controlPath = controlPath;
        this.batch = batch;
    }

    /**
     * {@code ssh -M -S CTL -T ... HOST 'sh -c "exec cat >/dev/null"'}: the master. Alive-checks end it in ~15 s when
     * the network path dies. Its session reads its stdin, a pipe from this JVM: when the JVM dies, even by SIGKILL,
     * the pipe closes, the session ends and the master exits (after the gateway's channel, whose stdin closed too);
     * a {@code -N} master would stay connected, an orphan, until the network drops it.
     */
    List<String> master() {
        List<String> cmd = new ArrayList<>(List.of(ssh, "-M", "-S", controlPath.toString(), "-T",
                "-o", "ControlPersist=no"));
        for (String o : options.options()) {
            cmd.addAll(List.of("-o", o));
        }
        cmd.addAll(List.of("-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=15"));
        if (batch) {
            cmd.addAll(List.of("-o", "BatchMode=yes"));
        }
        if (options.identity() != null) {
            cmd.addAll(List.of("-i", options.identity().toString()));
        }
        addDestination(cmd);
        cmd.add(RemoteShell.sh("exec cat >/dev/null"));
        return cmd;
    }

    /** {@code ssh -S CTL -O OP [ARGS] HOST}: check, exit or forward on the master. */
    List<String> control(String op, String... args) {
        List<String> cmd = through();
        cmd.addAll(List.of("-O", op));
        cmd.addAll(List.of(args));
        addDestination(cmd);
        return cmd;
    }

    /** {@code ssh -S CTL -T HOST 'sh -c SCRIPT'}: a remote command over the master's connection, no terminal. */
    List<String> remote(String commandLine) {
        List<String> cmd = through();
        cmd.add("-T");
        addDestination(cmd);
        cmd.add(commandLine);
        return cmd;
    }

    private List<String> through() {
        List<String> cmd = new ArrayList<>(List.of(ssh, "-S", controlPath.toString(), "-o", "ControlMaster=no"));
        for (String o : options.options()) {
            cmd.addAll(List.of("-o", o));
        }
        cmd.addAll(List.of("-o", "BatchMode=yes"));
        return cmd;
    }

    private void addDestination(List<String> cmd) {
        if (dest.port() != 0) {
            cmd.addAll(List.of("-p", String.valueOf(dest.port())));
        }
        if (dest.user() != null) {
            cmd.addAll(List.of("-l", dest.user()));
        }
        cmd.add("--");
        cmd.add(dest.host());
    }
}
