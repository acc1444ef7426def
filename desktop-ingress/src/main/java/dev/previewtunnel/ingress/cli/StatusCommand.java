package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.json.JsonTrees;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code status}: what a running ingress is doing, from its control API. Observes only. */
@Command(name = "status",
        mixinStandardHelpOptions = true,
        versionProvider = IngressVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footerHeading = IngressMain.EXIT_CODES_THEN_EXAMPLES,
        footer = {"  desktop-ingress status",
                "  desktop-ingress status --json"},
        description = {
                "Show a running ingress: proxy address, gateway, tunnel state (connected, or reconnecting since "
                        + "when and why), live streams, reconnects, the same for each environment with a gateway "
                        + "of its own (--environment-gateway), and every session with its authorities.",
                "Human-readable by default; --json prints the control API's status object as one JSON line. "
                        + "Only observes: never starts or changes anything. Exit 2 when no ingress runs with "
                        + "this state directory."})
final class StatusCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    ControlClient.Options control;

    @Option(names = "--json", description = "Print the raw status JSON (one line) instead of a table.")
    boolean json;

    @Override
    public Integer call() {
        ControlClient client = control.client(spec);
        JsonNode status = client.get("/v1/status");
        if (json) {
            Cli.printLine(JsonTrees.write(status));
            return ExitCodes.OK;
        }
        JsonNode sessions = client.get("/v1/sessions").path("sessions");
        PrintWriter out = spec.commandLine().getOut();
        out.printf(Locale.ROOT, "%-10s %s%n", "proxy", status.path("proxy").asText());
        out.printf(Locale.ROOT, "%-10s %s%n", "gateway", status.path("gateway").asText());
        out.printf(Locale.ROOT, "%-10s %s%n", "tunnel", tunnel(status.path("tunnel")));
        for (var it = status.path("environments").fields(); it.hasNext(); ) {
            var e = it.next();
            out.printf(Locale.ROOT, "%-10s %s: %s, %s%n", "env", Cli.shown(e.getKey()),
                    e.getValue().path("gateway").asText(), tunnel(e.getValue().path("tunnel")));
        }
        out.printf(Locale.ROOT, "%-10s %d%n", "sessions", status.path("sessions").asInt());
        if (sessions.size() > 0) {
            out.println();
            out.printf(Locale.ROOT, "%-16s %-20s %-7s %-5s %s%n", "SESSION", "USER", "EGRESS", "LIVE", "AUTHORITIES");
            for (JsonNode s : sessions) {
                List<String> authorities = new ArrayList<>();
                for (JsonNode g : s.path("grants")) {
                    for (JsonNode a : g.path("authorities")) {
                        authorities.add(a.asText());
                    }
                }
                out.printf(Locale.ROOT, "%-16s %-20s %-7s %-5d %s%n", s.path("id").asText(),
                        s.path("username").asText(), s.path("egress").asText(), s.path("liveConnections").asInt(),
                        authorities.isEmpty() ? "(no grants)" : String.join(", ", authorities));
            }
        }
        out.flush();
        return ExitCodes.OK;
    }

    /** One pool's state as a line: "connected (2/2 connections, ...)" or "reconnecting (...) since T; ...". */
    private static String tunnel(JsonNode tunnel) {
        StringBuilder t = new StringBuilder(tunnel.path("state").asText("unknown"));
        t.append(" (").append(tunnel.path("connected").asInt()).append('/').append(tunnel.path("size").asInt())
                .append(" connections, ").append(tunnel.path("liveStreams").asInt()).append(" live streams, ")
                .append(tunnel.path("reconnects").asLong()).append(" reconnects)");
        if (tunnel.has("reconnectingSince")) {
            t.append(" since ").append(tunnel.path("reconnectingSince").asText());
        }
        if (tunnel.has("lastError")) {
            t.append("; last error: ").append(Cli.shown(tunnel.path("lastError").asText()));
        }
        return t.toString();
    }
}
