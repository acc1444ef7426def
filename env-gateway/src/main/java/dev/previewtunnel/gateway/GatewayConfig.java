package dev.previewtunnel.gateway;

import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.SettingRange;

import java.net.SocketAddress;
import java.time.Duration;

/**
 * Everything a gateway needs to run. Built by the CLI from flags; tests build it directly.
 *
 * @param environment      the environment this gateway serves; tokens and grants must name it
 * @param listen           where the tunnel endpoint listens: an InetSocketAddress (loopback by default: reach it
 *                         through ssh -L or a relay) or a java.net.UnixDomainSocketAddress (ssh -L to the socket)
 * @param path             HTTP path of the WebSocket endpoint
 * @param dialTimeout      how long a TCP connect to a target may take before the stream fails with dial_timeout
 * @param handshakeTimeout how long a client may take to complete the upgrade (slowloris bound)
 * @param drainTimeout     on shutdown, how long streams in flight may continue after GOAWAY
 * @param limits           per-session and per-connection abuse limits
 */
public record GatewayConfig(
        String environment,
        SocketAddress listen,
        String path,
        MuxSettings mux,
        VerifierPolicy verifierPolicy,
        TargetPolicy targetPolicy,
        Duration dialTimeout,
        Duration handshakeTimeout,
        Duration drainTimeout,
        int ioThreads,
        GatewayLimits limits) {

    /**
     * Two event loops: a gateway may serve several desktops and its relays' bulk spreads over two cores; one loop
     * did not open streams faster here (docs/performance.md finding 59, unlike the ingress's).
     */
    public static final int DEFAULT_IO_THREADS = 2;
    public static final int MAX_IO_THREADS = 64;

    /** The range an operator may set the handshake timeout in ('serve' checks it); not enforced here. */
    public static final SettingRange<Duration> HANDSHAKE_TIMEOUT =
            new SettingRange<>("handshakeTimeout", Duration.ofSeconds(1), Duration.ofMinutes(10));

    /** The configuration without explicit limits: {@link GatewayLimits#defaults()}. */
    public GatewayConfig(String environment, SocketAddress listen, String path, MuxSettings mux,
                         VerifierPolicy verifierPolicy, TargetPolicy targetPolicy, Duration dialTimeout,
                         Duration handshakeTimeout, Duration drainTimeout, int ioThreads) {
        this(environment, listen, path, mux, verifierPolicy, targetPolicy, dialTimeout, handshakeTimeout,
                drainTimeout, ioThreads, GatewayLimits.defaults());
    }

    public static GatewayConfig defaults(String environment, SocketAddress listen) {
        return new GatewayConfig(environment, listen, MuxProtocol.DEFAULT_PATH, MuxSettings.defaults(),
                VerifierPolicy.defaults(), TargetPolicy.loopbackOnly(), Duration.ofSeconds(5),
                Duration.ofSeconds(10), Duration.ofSeconds(10), DEFAULT_IO_THREADS, GatewayLimits.defaults());
    }

    public GatewayConfig withMux(MuxSettings settings) {
        return new GatewayConfig(environment, listen, path, settings, verifierPolicy, targetPolicy, dialTimeout,
                handshakeTimeout, drainTimeout, ioThreads, limits);
    }

    public GatewayConfig withDrainTimeout(Duration drain) {
        return new GatewayConfig(environment, listen, path, mux, verifierPolicy, targetPolicy, dialTimeout,
                handshakeTimeout, drain, ioThreads, limits);
    }

    public GatewayConfig withLimits(GatewayLimits newLimits) {
        return new GatewayConfig(environment, listen, path, mux, verifierPolicy, targetPolicy, dialTimeout,
                handshakeTimeout, drainTimeout, ioThreads, newLimits);
    }

    public GatewayConfig withTargetPolicy(TargetPolicy policy) {
        return new GatewayConfig(environment, listen, path, mux, verifierPolicy, policy, dialTimeout,
                handshakeTimeout, drainTimeout, ioThreads, limits);
    }

    public GatewayConfig withHandshakeTimeout(Duration timeout) {
        return new GatewayConfig(environment, listen, path, mux, verifierPolicy, targetPolicy, dialTimeout,
                timeout, drainTimeout, ioThreads, limits);
    }
}
