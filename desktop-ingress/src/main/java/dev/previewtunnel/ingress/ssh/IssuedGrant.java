package dev.previewtunnel.ingress.ssh;

import java.time.Instant;

/** A grant minted by the remote gateway; {@link #toString()} leaves the JWT out (a secret: never in logs). */
public record IssuedGrant(String jwt, String grantId, Instant expiresAt) {
    @Override
    public String toString() {
        return "IssuedGrant[grantId=" + grantId + ", expiresAt=" + expiresAt + "]";
    }
}
