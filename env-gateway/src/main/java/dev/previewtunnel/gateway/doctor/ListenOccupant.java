package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.mux.client.TunnelConnectException;
import dev.previewtunnel.mux.client.TunnelProbe;
import dev.previewtunnel.mux.client.UpgradeAnswer;

import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;

/**
 * What already listens on an address serve would bind: nothing, a preview-tunnel gateway, or another program. Asked
 * with a tunnel upgrade without a token through {@link TunnelProbe} (the real client): a gateway refuses it with 401
 * {@code token_missing} before it checks anything, and nothing is opened.
 */
final class ListenOccupant {
    static final String GATEWAY = "gateway";

    private ListenOccupant() {
    }

    /** Null when nothing accepts on the address, {@link #GATEWAY} for a gateway, else what answered there. */
    static String of(InetSocketAddress address, String path, boolean tls, Duration timeout) {
        URI url = URI.create("ws://" + Cli.hostPort(address) + path);
        try (TunnelProbe probe = new TunnelProbe(timeout, Clock.systemUTC())) {
            TunnelProbe.Dial dial = probe.dial(url, null, null);
            TunnelConnectException failure = dial.failure();
            if (failure != null && failure.reason() == TunnelConnectException.Reason.UNREACHABLE) {
                return null;
            }
            if (tls) {
                return "something accepts TCP there; with TLS configured it is not probed further";
            }
            UpgradeAnswer answer = dial.answer();
            if (answer != null) {
                return answer.status() == 401 && "token_missing".equals(answer.error()) ? GATEWAY
                        : "it answered HTTP " + answer.status();
            }
            if (failure == null) {
                return "it accepted a tunnel connection without a token"; // no gateway of this project does
            }
            return switch (failure.reason()) {
                case NO_ANSWER -> "it accepted but did not answer an HTTP request";
                case CLOSED -> "it accepted and closed the connection";
                default -> "it does not answer like a gateway (" + Cli.shown(failure.getMessage()) + ")";
            };
        }
    }
}
