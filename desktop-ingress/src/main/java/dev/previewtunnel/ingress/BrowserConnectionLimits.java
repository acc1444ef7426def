package dev.previewtunnel.ingress;

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
