package dev.previewtunnel.ingress;

import dev.previewtunnel.mux.wire.SettingRange;

import java.time.Duration;

/**
 * The budget of the browser-facing listener (see docs/security.md, "Hostile peers", 5).
 *
 * @param maxConnections          open browser connections in all
 * @param maxUnauthenticated      of those, connections that have not yet sent a request with a valid session
 *                                credential; lower than the total, so authenticated sessions keep headroom
 * @param unauthenticatedTimeout  a connection not authenticated this long after accept is closed
 * @param bodyIdleTimeout         while the ingress waits for a request body, each period this long must bring at
 *                                least {@code RequestBodyDeadline.MIN_BYTES} or the body's end, else the request
 *                                is cut (408 page if no response started; the target's stream is reset)
 */
public record BrowserConnectionLimits(int maxConnections, int maxUnauthenticated, Duration unauthenticatedTimeout,
                                      Duration bodyIdleTimeout) {
    // The ranges an operator may set ('run' checks its flags against them; the unauthenticated share is bounded by
    // the total, checked below); not enforced here, so that tests can use small budgets and short deadlines.
    public static final SettingRange<Integer> MAX_CONNECTIONS = new SettingRange<>("maxConnections", 16, 1_000_000);
    public static final SettingRange<Duration> UNAUTHENTICATED_TIMEOUT =
            new SettingRange<>("unauthenticatedTimeout", Duration.ofSeconds(1), Duration.ofMinutes(10));
    public static final SettingRange<Duration> BODY_IDLE_TIMEOUT =
            new SettingRange<>("bodyIdleTimeout", Duration.ofSeconds(1), Duration.ofHours(1));

    public BrowserConnectionLimits {
        if (maxUnauthenticated > maxConnections) {
            throw new IllegalArgumentException("max unauthenticated connections (" + maxUnauthenticated
                    + ") must not exceed max connections (" + maxConnections + ")");
        }
    }

    public static BrowserConnectionLimits defaults() {
        return new BrowserConnectionLimits(4096, 512, Duration.ofSeconds(10), Duration.ofSeconds(30));
    }
}
