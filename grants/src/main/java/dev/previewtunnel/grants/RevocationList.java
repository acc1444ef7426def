package dev.previewtunnel.grants;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The gateway's in-memory revocation set. An entry only has to outlive the grants it revokes: grants live at
 * most {@code maxGrantLifetime}, so entries are dropped that long (plus clock skew) after they were made, which
 * keeps the set small however many revocations arrive.
 *
 * <p>Revoking a session refuses every grant of that session issued up to the revocation; a grant issued later
 * (the environment's authority re-granted the session on purpose) is accepted.
 */
public final class RevocationList implements RevokedGrants {
    private final Clock clock;
    private final Duration retention;
    private final Map<String, Instant> grants = new ConcurrentHashMap<>();
    private final Map<String, Instant> sessions = new ConcurrentHashMap<>();

    public RevocationList(Clock clock, VerifierPolicy policy) {
        this.clock = clock;
        this.retention = policy.maxGrantLifetime().plus(policy.clockSkew());
    }

    public void revokeGrant(String jti) {
        prune();
        grants.put(jti, clock.instant());
    }

    public void revokeSession(String session) {
        prune();
        sessions.put(session, clock.instant());
    }

    @Override
    public boolean isRevoked(String jti) {
        return grants.containsKey(jti);
    }

    @Override
    public boolean isSessionRevoked(String session, Instant issuedAt) {
        Instant revokedAt = sessions.get(session);
        return revokedAt != null && !issuedAt.isAfter(revokedAt);
    }

    public int size() {
        return grants.size() + sessions.size();
    }

    private void prune() {
        Instant cutoff = clock.instant().minus(retention);
        grants.values().removeIf(at -> at.isBefore(cutoff));
        sessions.values().removeIf(at -> at.isBefore(cutoff));
    }
}
