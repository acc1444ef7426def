package dev.previewtunnel.ingress.session;

import dev.previewtunnel.mux.wire.Authority;

/**
 * Where a browser-visible authority goes: the stream's {@code :authority} (exactly the grant's target, which
 * the gateway checks), the grant to present and the grant's environment (which picks the gateway; null for
 * direct egress). {@link #toString()} never shows the grant.
 */
public record Route(Authority requested, Authority target, String grant, String grantId, String environment) {
    /** Without an environment: direct egress, or streams that go to the default gateway. */
    public Route(Authority requested, Authority target, String grant, String grantId) {
        this(requested, target, grant, grantId, null);
    }

    @Override
    public String toString() {
        return "Route[" + requested + " -> " + target + ", grant " + grantId + "]";
    }
}
