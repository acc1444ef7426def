package dev.previewtunnel.grants;

import java.time.Instant;

/**
 * Lets the gateway refuse grants before they expire: one grant by {@code jti}, or every grant of a browser
 * session issued up to the moment the session was revoked. Checked last, after the signature, so an attacker
 * cannot probe the list with forged tokens.
 */
@FunctionalInterface
public interface RevokedGrants {
    RevokedGrants NONE = jti -> false;

    boolean isRevoked(String jti);

    /** True when grants of {@code session} issued at or before {@code issuedAt} were revoked. */
    default boolean isSessionRevoked(String session, Instant issuedAt) {
        return false;
    }
}
