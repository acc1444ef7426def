package dev.previewtunnel.ingress.session;

import dev.previewtunnel.mux.Authority;

/**
 * Where a browser-visible authority goes: the stream's {@code :authority} (exactly the grant's target, which
 * the gateway checks) and the grant to present. {@link #toString()} never shows the grant.
 */
public record Route(Authority requested, Authority target, String grant, String grantId) {
    @Override
    public String toString() {
        return "Route[" + requested + " -> " + target + ", grant " + grantId + "]";
    }
}
