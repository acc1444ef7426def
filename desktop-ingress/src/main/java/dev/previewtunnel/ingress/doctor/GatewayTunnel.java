package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.mux.client.TunnelConnection;

/**
 * A gateway once its checks are done: the tunnel connection it accepted with the token, which the grants' targets
 * are opened through, or null when it did not accept one.
 */
public record GatewayTunnel(GatewayLabel label, TunnelConnection connection) {
    public boolean accepted() {
        return connection != null;
    }

    @Override
    public String toString() {
        return "GatewayTunnel[" + label.who() + ", accepted=" + accepted() + "]";
    }
}
