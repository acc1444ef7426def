package dev.previewtunnel.ingress.doctor;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.DoctorReport;

import java.util.Set;

/**
 * {@code environment-gateway} (warn): the running ingress sends an environment to a gateway of its own that these
 * settings do not name. Without them that gateway goes unchecked, and its environment's grants would be checked
 * through the default gateway, which refuses them: say why and what to give.
 */
public record UnnamedEnvironmentsCheck(JsonNode running, Set<String> named) {

    public void run(DoctorReport report) {
        running.path("environments").fields().forEachRemaining(e -> {
            if (!named.contains(e.getKey())) {
                report.warn("environment-gateway", "the running ingress sends environment '"
                        + Cli.shown(e.getKey()) + "' to a gateway of its own (" + Cli.shown(e.getValue()
                        .path("gateway").asText()) + ") that these settings do not name: give the same "
                        + "--environment-gateway " + Cli.shown(e.getKey()) + "=URL and --environment-token-file "
                        + Cli.shown(e.getKey()) + "=FILE as 'run' to check it and that environment's grants");
            }
        });
    }
}
