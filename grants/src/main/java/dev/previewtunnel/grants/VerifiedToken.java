package dev.previewtunnel.grants;

import java.time.Instant;

/** A connection token that passed {@link GrantVerifier#verifyConnectionToken}. Holds no token text. */
public record VerifiedToken(String environment, String jti, String kid, Instant expiresAt) {
}
