package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.ingress.ssh.GatewayJar;
import dev.previewtunnel.ingress.ssh.RemoteSetup;
import dev.previewtunnel.ingress.ssh.SshDestination;
import dev.previewtunnel.ingress.ssh.SshOptions;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** How {@code open} and {@code ports} reach an SSH host and start the gateway there: one spelling for both. */
final class SshTargetOptions {
    @Option(names = "--identity", paramLabel = "FILE", description = "ssh -i FILE: the identity to log in with.")
    Path identity;

    @Option(names = "--ssh-option", paramLabel = "KEY=VALUE",
            description = "ssh -o KEY=VALUE, repeatable (e.g. --ssh-option ProxyJump=bastion).")
    List<String> sshOptions = new ArrayList<>();

    @Option(names = "--ssh", paramLabel = "PATH", defaultValue = "ssh",
            description = "The ssh client (default: ssh on PATH).")
    Path ssh;

    @Option(names = "--remote-java", paramLabel = "PATH",
            description = "The java (17+) to run the gateway with on the host (default: java on the host's PATH).")
    String remoteJava;

    @Option(names = "--remote-gateway", paramLabel = "COMMAND",
            description = "The env-gateway command on the host (default: env-gateway on its PATH, else the "
                    + "uploaded jar).")
    String remoteGateway;

    @Option(names = "--gateway-jar", paramLabel = "FILE",
            description = "The env-gateway jar to upload (default: the one shipped beside this program).")
    Path gatewayJar;

    @Option(names = "--connect-timeout", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            defaultValue = "10m",
            description = "How long the first connection may take in all: SSH (a passphrase or host key asked on "
                    + "the terminal included), the gateway jar's first upload and the gateway's start (default: "
                    + "10m; each step has its own shorter limit).")
    Duration connectTimeout;

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "Directory for the browser profiles, the ssh control socket and the remote gateway's "
                    + "log; created rwx------ (default: $XDG_STATE_HOME/preview-tunnel, else "
                    + "~/.local/state/preview-tunnel).")
    Path stateDir;

    SshOptions ssh(Settings s) {
        return new SshOptions(ssh, identity, s.list("ssh-option", sshOptions, Settings::text));
    }

    /** What the host runs; the jar is looked up only when no --remote-gateway is given. */
    RemoteSetup remote(SshDestination dest) {
        Path jar;
        try {
            jar = remoteGateway != null ? null : GatewayJar.locate(gatewayJar);
        } catch (IllegalStateException | IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, e.getMessage());
        }
        return new RemoteSetup(remoteJava, remoteGateway, jar, IngressVersionProvider.projectVersion(),
                environmentFor(dest));
    }

    Path stateDir() {
        return (stateDir != null ? stateDir : IngressCli.defaultStateDir()).toAbsolutePath().normalize();
    }

    /** The environment name grants carry: "ssh-" and the host, in the characters a DNS label allows. */
    static String environmentFor(SshDestination dest) {
        String env = "ssh-" + dest.host().toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9-]", "-");
        return env.length() > 63 ? env.substring(0, 63) : env;
    }
}
