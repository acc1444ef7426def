package dev.previewtunnel.gateway;

/** What a running gateway reports about itself (the admin endpoint's {@code /v1/status}). */
public record GatewayStatus(String environment, int connections, int liveStreams) {
}
