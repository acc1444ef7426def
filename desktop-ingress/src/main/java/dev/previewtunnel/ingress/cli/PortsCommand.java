package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.cli.SettingsProvider;
import dev.previewtunnel.cli.StateDirectory;
import dev.previewtunnel.ingress.open.OpenSession;
import dev.previewtunnel.ingress.ssh.RemotePort;
import dev.previewtunnel.ingress.ssh.SshDestination;
import dev.previewtunnel.ingress.ssh.SshLink;
import dev.previewtunnel.ingress.ssh.SshLinkException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code ports ssh://HOST}: the TCP ports your SSH user listens on at the host's loopback (or wildcard), as the
 * gateway there reads them; what {@code open --port auto} would open. Lists, never grants.
 */
@Command(name = "ports",
        mixinStandardHelpOptions = true,
        defaultValueProvider = IngressSettingsProvider.class,
        versionProvider = IngressVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        sortOptions = false,
        description = {
                "List the ports your SSH user listens on at an SSH host's loopback: what 'open --port auto' opens.",
                "Starts the gateway on the host over SSH the way 'open' does (uploading its jar once), asks it, "
                        + "and stops it again. One line per port (PORT ADDRESS), or with --json one JSON object "
                        + "{\"host\":...,\"ports\":[...]}."},
        footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  desktop-ingress ports ssh://dev.example.com",
                "  desktop-ingress ports ssh://me@dev.example.com:2222 --json"})
final class PortsCommand implements Callable<Integer> {
    static final Set<String> CONFIG_KEYS = SettingsProvider.keysOf(new PortsCommand(),
            IngressSettingsProvider.NOT_SETTINGS);

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "ssh://[USER@]HOST[:PORT]", description = "The SSH host.")
    String destination;

    @Option(names = "--json", description = "One JSON object instead of lines.")
    boolean json;

    @Option(names = "--config", paramLabel = "FILE",
            description = "JSON config file with these options' names as keys (default: $PTUN_INGRESS_CONFIG).")
    Path config;

    @Mixin
    SshTargetOptions target = new SshTargetOptions();

    @Override
    public Integer call() throws InterruptedException {
        Settings s = SettingsProvider.settings(spec, config, IngressCli.ENV_PREFIX, CONFIG_KEYS);
        SshDestination dest;
        try {
            dest = SshDestination.parse(destination);
        } catch (IllegalArgumentException e) {
            throw Cli.usage(spec, e.getMessage());
        }
        Path dir = target.stateDir();
        StateDirectory.prepare(dir, "the ssh control socket");
        List<RemotePort> ports;
        try (SshLink link = SshLink.start(dest, target.ssh(s), target.remote(dest),
                OpenSession.hostDir(dir, dest), new SshLink.Listener() {
                    @Override
                    public void up(dev.previewtunnel.ingress.ssh.GatewayControl control) {
                    }

                    @Override
                    public void down(String why) {
                    }
                })) {
            long ms = target.connectTimeout.toMillis();
            link.firstUp().get(ms, TimeUnit.MILLISECONDS);
            int forward = link.gatewayUri().getPort(); // listed too when the host is this machine: not the user's
            ports = link.control().ports().get(ms, TimeUnit.MILLISECONDS).stream()
                    .filter(p -> p.port() != forward).toList();
        } catch (SshLinkException e) {
            throw new CliException(ExitCodes.UNREACHABLE, e.getMessage());
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw new CliException(ExitCodes.UNREACHABLE, cause instanceof SshLinkException ? cause.getMessage()
                    : "listing the ports of " + dest.shown() + " failed: " + cause.getMessage());
        } catch (TimeoutException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "connecting to " + dest.shown() + " took longer than "
                    + target.connectTimeout.toSeconds() + " s");
        }
        if (json) {
            ObjectNode out = Cli.json().put("host", dest.shown());
            ArrayNode list = out.putArray("ports");
            ports.forEach(p -> list.addObject().put("port", p.port()).put("address", p.address()));
            Cli.printJson(out);
        } else {
            ports.forEach(p -> Cli.printLine(p.port() + " " + p.address()));
        }
        return ExitCodes.OK;
    }
}
