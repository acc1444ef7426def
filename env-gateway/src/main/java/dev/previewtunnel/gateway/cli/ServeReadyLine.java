package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.gateway.admin.AdminServer;
import dev.previewtunnel.local.http.MetricsServer;
import dev.previewtunnel.mux.wire.MuxProtocol;

/**
 * The one JSON line {@code serve} prints on stdout once it listens: where to reach it (its URL, or on a Unix socket
 * its path, the client dialling the socket's forward), the environment, protocol, transport and version, and the
 * admin and metrics endpoints when they are served. Scripts and {@code desktop-ingress open} read it; it names the
 * admin token's file, never the token.
 */
final class ServeReadyLine {
    private ServeReadyLine() {
    }

    /** {@code admin} and {@code metrics} are null when not served. */
    static ObjectNode of(GatewayServer running, boolean tls, String tunnelPath, String env, AdminServer admin,
                         MetricsServer metrics) {
        ObjectNode ready = Cli.json()
                .put("event", "ready")
                .put("listen", running.listen());
        if (running.onUnixSocket()) {
            ready.put("path", tunnelPath); // no URL of its own: the client dials the forward (ssh -L)
        } else {
            ready.put("url", running.url(tls));
        }
        ready.put("env", env)
                .put("protocol", MuxProtocol.SUBPROTOCOL)
                .put("transport", running.transportName())
                .put("version", GatewayVersionProvider.projectVersion());
        if (admin != null) {
            ready.put("admin", admin.url())
                    .put("adminTokenFile", admin.tokenFile().toAbsolutePath().toString());
        }
        if (metrics != null) {
            ready.put("metrics", metrics.url());
        }
        return ready;
    }
}
