package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.wire.SettingRange;

import java.time.Duration;

/**
 * Abuse limits of one gateway, each with the default documented in docs/security.md. Protocol-level limits
 * (streams per connection, frame, header-list and WebSocket message sizes, RST_STREAM rate) live in
 * {@link dev.previewtunnel.mux.wire.MuxSettings}.
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
 * @param connectionsPerToken   tunnel connections one connection token may hold open at once (the N+1th upgrade
 *                              is answered 429 {@code too_many_connections})
 * @param grantFailuresPerSecond failed grant verifications one connection token may cause per second, across its
 *                              connections; once spent the token cools down (see {@link FailureBudget})
 * @param grantFailureCoolDown  how long a token that spent its failure budget has every stream open refused
 *                              unverified ({@code too_many_streams}, detail {@code grant_failure_cooldown})
 * @param tokenFailuresPerSecond failed connection-token verifications per second, gateway-wide; beyond it an
 *                              upgrade with a token not seen verifying before is refused 429 unverified
 *                              (see {@link HandshakeFailureGuard})
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
        int maxRevocations,
        int connectionsPerToken,
        int grantFailuresPerSecond,
        Duration grantFailureCoolDown,
        int tokenFailuresPerSecond) {

    // The ranges an operator may set ('serve' checks its flags against them; the handshaking share is bounded by
    // the total there); not enforced here, so that tests can use small budgets and short deadlines.
    public static final SettingRange<Integer> STREAMS_PER_SESSION =
            new SettingRange<>("streamsPerSession", 1, 1_000_000);
    public static final SettingRange<Integer> OPEN_BURST = new SettingRange<>("openBurst", 1, 1_000_000);
    public static final SettingRange<Integer> PENDING_DIALS =
            new SettingRange<>("pendingDialsPerConnection", 1, 100_000);
    public static final SettingRange<Long> QUEUED_BYTES =
            new SettingRange<>("queuedBytesPerConnection", 1L << 20, 1L << 30);
    public static final SettingRange<Duration> STREAM_IDLE =
            new SettingRange<>("streamIdleTimeout", Duration.ofSeconds(1), Duration.ofDays(7));
    public static final SettingRange<Duration> CONNECTION_IDLE =
            new SettingRange<>("connectionIdleTimeout", Duration.ofSeconds(1), Duration.ofDays(7));
    public static final SettingRange<Integer> MAX_CONNECTIONS = new SettingRange<>("maxConnections", 1, 1_000_000);
    public static final SettingRange<Integer> MAX_REVOCATIONS = new SettingRange<>("maxRevocations", 1, 100_000);
    public static final SettingRange<Integer> CONNECTIONS_PER_TOKEN =
            new SettingRange<>("connectionsPerToken", 1, 100_000);
    public static final SettingRange<Integer> GRANT_FAILURES =
            new SettingRange<>("grantFailuresPerSecond", 1, 100_000);
    public static final SettingRange<Duration> GRANT_FAILURE_COOL_DOWN =
            new SettingRange<>("grantFailureCoolDown", Duration.ofSeconds(1), Duration.ofHours(1));
    public static final SettingRange<Integer> TOKEN_FAILURES =
            new SettingRange<>("tokenFailuresPerSecond", 1, 100_000);

    public static final int DEFAULT_MAX_CONNECTIONS = 1024;
    public static final int DEFAULT_MAX_HANDSHAKING = 64;
    /** Default for {@link #maxRevocations}. */
    public static final int DEFAULT_MAX_REVOCATIONS = dev.previewtunnel.grants.RevocationList.DEFAULT_MAX_ENTRIES;
    static final int DEFAULT_CONNECTIONS_PER_TOKEN = 256;
    static final int DEFAULT_GRANT_FAILURES_PER_SECOND = 100;
    static final Duration DEFAULT_GRANT_FAILURE_COOL_DOWN = Duration.ofSeconds(10);
    static final int DEFAULT_TOKEN_FAILURES_PER_SECOND = 100;

    /** The stream limits given; connection caps, revocation list and per-token limits take their defaults. */
    public GatewayLimits(int streamsPerSession, double opensPerSecond, int openBurst, int pendingDialsPerConnection,
                         Duration streamIdleTimeout, Duration connectionIdleTimeout, long queuedBytesPerConnection) {
        this(streamsPerSession, opensPerSecond, openBurst, pendingDialsPerConnection, streamIdleTimeout,
                connectionIdleTimeout, queuedBytesPerConnection, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HANDSHAKING,
                DEFAULT_MAX_REVOCATIONS, DEFAULT_CONNECTIONS_PER_TOKEN, DEFAULT_GRANT_FAILURES_PER_SECOND,
                DEFAULT_GRANT_FAILURE_COOL_DOWN, DEFAULT_TOKEN_FAILURES_PER_SECOND);
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
        if (connectionsPerToken < 1 || grantFailuresPerSecond < 1 || tokenFailuresPerSecond < 1) {
            throw new IllegalArgumentException("per-token limits must be positive");
        }
        if (grantFailureCoolDown.isNegative() || grantFailureCoolDown.isZero()) {
            throw new IllegalArgumentException("grantFailureCoolDown must be positive");
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

    /** These limits with the tunnel listener's connection caps replaced. */
    public GatewayLimits withConnectionCaps(int connections, int handshaking) {
        return new GatewayLimits(streamsPerSession, opensPerSecond, openBurst, pendingDialsPerConnection,
                streamIdleTimeout, connectionIdleTimeout, queuedBytesPerConnection, connections, handshaking,
                maxRevocations, connectionsPerToken, grantFailuresPerSecond, grantFailureCoolDown,
                tokenFailuresPerSecond);
    }

    /** These limits with the revocation list's size replaced. */
    public GatewayLimits withMaxRevocations(int revocations) {
        return new GatewayLimits(streamsPerSession, opensPerSecond, openBurst, pendingDialsPerConnection,
                streamIdleTimeout, connectionIdleTimeout, queuedBytesPerConnection, maxConnections, maxHandshaking,
                revocations, connectionsPerToken, grantFailuresPerSecond, grantFailureCoolDown,
                tokenFailuresPerSecond);
    }

    /** These limits with the per-token ones replaced. */
    public GatewayLimits withTokenLimits(int connections, int grantFailures, Duration coolDown, int tokenFailures) {
        return new GatewayLimits(streamsPerSession, opensPerSecond, openBurst, pendingDialsPerConnection,
                streamIdleTimeout, connectionIdleTimeout, queuedBytesPerConnection, maxConnections, maxHandshaking,
                maxRevocations, connections, grantFailures, coolDown, tokenFailures);
    }
}
