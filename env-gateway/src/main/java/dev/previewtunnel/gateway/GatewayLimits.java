package dev.previewtunnel.gateway;

import java.time.Duration;

/**
 * Abuse limits of one gateway, each with the default documented in docs/security.md. Protocol-level limits
 * (streams per connection, frame, header-list and WebSocket message sizes, RST_STREAM rate) live in
 * {@link dev.previewtunnel.mux.MuxSettings}.
 *
 * @param streamsPerSession     concurrent streams one browser session may hold across all connections
 * @param opensPerSecond        sustained stream opens per second per session (token bucket rate)
 * @param openBurst             stream opens a session may make at once (token bucket size); a page load that
 *                              opens and aborts hundreds of connections stays well inside it
 * @param pendingDialsPerConnection dials in progress on one tunnel connection
 * @param streamIdleTimeout     a stream with no bytes either way for this long is closed
 * @param connectionIdleTimeout a tunnel connection with no streams for this long is closed (GOAWAY)
 * @param queuedBytesPerConnection target bytes one connection's streams may hold unsent, shared among them as
 *                              their write high-water marks (see {@link StreamWriteShares})
 * @param maxConnections        tunnel connections open at once, upgraded or not; more are closed at accept
 * @param maxHandshaking        of those, connections still before a completed upgrade (token not yet checked):
 *                              lower than the total, so authenticated connections keep headroom
 * @param maxRevocations        revocations (grant/token ids and sessions) held at once; at the limit a new one is
 *                              refused (never made room for by forgetting one)
 */
public record GatewayLimits(
        int streamsPerSession,
        double opensPerSecond,
        int openBurst,
        int pendingDialsPerConnection,
        Duration streamIdleTimeout,
        Duration connectionIdleTimeout,
        long queuedBytesPerConnection,
        int maxConnections,
        int maxHandshaking,
        int maxRevocations) {

    public static final int DEFAULT_MAX_CONNECTIONS = 1024;
    public static final int DEFAULT_MAX_HANDSHAKING = 64;
    /** Default for {@link #maxRevocations}. */
    public static final int DEFAULT_MAX_REVOCATIONS = dev.previewtunnel.grants.RevocationList.DEFAULT_MAX_ENTRIES;

    /** The limits with the default connection caps and {@link #maxRevocations}. */
    public GatewayLimits(int streamsPerSession, double opensPerSecond, int openBurst, int pendingDialsPerConnection,
                         Duration streamIdleTimeout, Duration connectionIdleTimeout, long queuedBytesPerConnection) {
        this(streamsPerSession, opensPerSecond, openBurst, pendingDialsPerConnection, streamIdleTimeout,
                connectionIdleTimeout, queuedBytesPerConnection, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HANDSHAKING,
                DEFAULT_MAX_REVOCATIONS);
    }

    /** The limits with the given connection caps and the default {@link #maxRevocations}. */
    public GatewayLimits(int streamsPerSession, double opensPerSecond, int openBurst, int pendingDialsPerConnection,
                         Duration streamIdleTimeout, Duration connectionIdleTimeout, long queuedBytesPerConnection,
                         int maxConnections, int maxHandshaking) {
        this(streamsPerSession, opensPerSecond, openBurst, pendingDialsPerConnection, streamIdleTimeout,
                connectionIdleTimeout, queuedBytesPerConnection, maxConnections, maxHandshaking,
                DEFAULT_MAX_REVOCATIONS);
    }

    /** The limits with the default connection caps and the given {@link #maxRevocations}. */
    public GatewayLimits(int streamsPerSession, double opensPerSecond, int openBurst, int pendingDialsPerConnection,
                         Duration streamIdleTimeout, Duration connectionIdleTimeout, long queuedBytesPerConnection,
                         int maxRevocations) {
        this(streamsPerSession, opensPerSecond, openBurst, pendingDialsPerConnection, streamIdleTimeout,
                connectionIdleTimeout, queuedBytesPerConnection, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HANDSHAKING,
                maxRevocations);
    }

    public GatewayLimits {
        if (maxConnections < 1 || maxHandshaking < 1 || maxHandshaking > maxConnections) {
            throw new IllegalArgumentException("need 1 <= max handshaking connections <= max connections");
        }
        if (streamsPerSession < 1 || opensPerSecond <= 0 || openBurst < 1 || pendingDialsPerConnection < 1) {
            throw new IllegalArgumentException("gateway limits must be positive");
        }
        if (streamIdleTimeout.isNegative() || streamIdleTimeout.isZero()
                || connectionIdleTimeout.isNegative() || connectionIdleTimeout.isZero()) {
            throw new IllegalArgumentException("idle timeouts must be positive");
        }
        if (queuedBytesPerConnection < StreamWriteShares.MIN_HIGH) {
            throw new IllegalArgumentException("queuedBytesPerConnection must be at least 32 KiB");
        }
        if (maxRevocations < 1) {
            throw new IllegalArgumentException("maxRevocations must be positive");
        }
    }

    public static GatewayLimits defaults() {
        return new GatewayLimits(512, 200, 1000, 128, Duration.ofMinutes(30), Duration.ofMinutes(10), 8L << 20);
    }

    public GatewayLimits withConnectionCaps(int connections, int handshaking) {
        return new GatewayLimits(streamsPerSession, opensPerSecond, openBurst, pendingDialsPerConnection,
                streamIdleTimeout, connectionIdleTimeout, queuedBytesPerConnection, connections, handshaking);
    }
}
