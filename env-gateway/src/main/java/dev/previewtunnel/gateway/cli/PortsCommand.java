package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.gateway.ports.LoopbackListeners;
import dev.previewtunnel.gateway.ports.PortsJson;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code ports}: which local TCP ports of this user a grant could point at (it lists; it never grants). */
@Command(name = "ports",
        mixinStandardHelpOptions = true,
        versionProvider = GatewayVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = GatewayMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  env-gateway ports", "  env-gateway ports --json"},
        description = {
                "List the TCP ports this user listens on that the gateway could dial: bound to a loopback address "
                        + "(127.0.0.0/8, ::1) or to every address (0.0.0.0, ::), read from /proc/net/tcp and "
                        + "/proc/net/tcp6. Other users' listeners are not shown.",
                "Listing grants nothing: a desktop still needs a grant for each port ('grant issue').",
                "Prints one line per port, 'PORT ADDRESS...', or with --json one JSON line: "
                        + "{\"ports\":[{\"port\":5173,\"addresses\":[\"127.0.0.1\"]}]}."})
final class PortsCommand implements Callable<Integer> {
    @Option(names = "--json", description = "One JSON line instead of one text line per port.")
    boolean json;

    @Override
    public Integer call() {
        List<LoopbackListeners.Port> ports;
        try {
            ports = LoopbackListeners.of(LoopbackListeners.currentUid());
        } catch (IOException | UnsupportedOperationException e) {
            throw new CliException(ExitCodes.INTERNAL, "cannot read this machine's listening sockets "
                    + "(/proc/net/tcp, Linux only): " + e.getClass().getSimpleName());
        }
        if (json) {
            Cli.printJson(PortsJson.putPorts(JsonNodeFactory.instance.objectNode(), ports));
        } else {
            for (LoopbackListeners.Port p : ports) {
                Cli.printLine(p.port() + " " + String.join(" ", p.addresses()));
            }
        }
        return ExitCodes.OK;
    }
}
