package dev.previewtunnel.grants;

import java.time.Instant;

/** Claims of a grant that passed every check in {@link GrantVerifier#verifyGrant}. Holds no token text. */
public record VerifiedGrant(String environment, String session, String targetHost, int targetPort,
                            String protocol, String provider, String thread, String jti, String kid,
                            Instant issuedAt, Instant expiresAt) {
}
