package dev.previewtunnel.grants;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The gateway's in-memory revocation set. An entry must outlive everything it revokes. An id (jti) may name a
 * grant or a connection token; anything accepted ends within skew + 2 x its lifetime cap of its iat (see
 * {@link GrantVerifier}), and what is revoked at T was issued by T + skew, so an id entry is kept
 * 2 x (the longer cap, 24 h for tokens by default) + 2 x skew, a session entry 2 x the grant cap + 2 x skew.
 *
 * <p>Revoking a session refuses every grant of that session issued up to the revocation; a grant issued later
 * (the environment's authority re-granted the session on purpose) is accepted.
 *
 * <p>The set holds at most {@code maxEntries}: a revocation that would add an entry beyond it is refused
 * ({@link Full}), never made room for by forgetting an older one, since forgetting would un-revoke.
 * Persistence is the caller's (this module does no I/O): {@link #entries()} and {@link #restore}.
 */
public final class RevocationList implements RevokedGrants {
    /** Default for {@code maxEntries}. */
    public static final int DEFAULT_MAX_ENTRIES = 10_000;

    /** What an entry revokes: one grant or token by its id, or every grant of a session issued until then. */
    public enum Kind { ID, SESSION }

    /** One revocation: what, and when (the gateway's clock). */
    public record Entry(Kind kind, String id, Instant revokedAt) {
        public Entry {
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(id, "id");
            Objects.requireNonNull(revokedAt, "revokedAt");
        }
    }

    /** The set is at its limit and this revocation would add an entry. Safe to show. */
    public static final class Full extends IllegalStateException {
        public Full(int max) {
            super("the revocation list holds its maximum of " + max + " entries");
        }
    }

    private final Clock clock;
    private final Duration idRetention;
    private final Duration sessionRetention;
    private final int maxEntries;
    private final Map<String, Instant> ids = new ConcurrentHashMap<>();
    private final Map<String, Instant> sessions = new ConcurrentHashMap<>();

    public RevocationList(Clock clock, VerifierPolicy policy) {
        this(clock, policy, DEFAULT_MAX_ENTRIES);
    }

    public RevocationList(Clock clock, VerifierPolicy policy, int maxEntries) {
        if (maxEntries < 1) throw new IllegalArgumentException("maxEntries must be >= 1");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.maxEntries = maxEntries;
        Duration longestCap = policy.maxTokenLifetime().compareTo(policy.maxGrantLifetime()) > 0
                ? policy.maxTokenLifetime() : policy.maxGrantLifetime();
        Duration twoSkews = policy.clockSkew().multipliedBy(2);
        this.idRetention = longestCap.multipliedBy(2).plus(twoSkews);
        this.sessionRetention = policy.maxGrantLifetime().multipliedBy(2).plus(twoSkews);
    }

    /** Revokes a grant or connection token by id (jti). @throws Full when at the limit and the id is new */
    public void revokeGrant(String jti) {
        put(ids, jti);
    }

    /** Revokes every grant of {@code session} issued until now. @throws Full when at the limit and it is new */
    public void revokeSession(String session) {
        put(sessions, session);
    }

    private synchronized void put(Map<String, Instant> map, String key) {
        Objects.requireNonNull(key, "id");
        prune();
        if (!map.containsKey(key) && size() >= maxEntries) {
            throw new Full(maxEntries);
        }
        map.put(key, clock.instant()); // a repeat moves the entry's time forward: it covers more, for longer
    }

    @Override
    public boolean isRevoked(String jti) {
        return ids.containsKey(jti);
    }

    @Override
    public boolean isSessionRevoked(String session, Instant issuedAt) {
        Instant revokedAt = sessions.get(session);
        return revokedAt != null && !issuedAt.isAfter(revokedAt);
    }

    public int size() {
        return ids.size() + sessions.size();
    }

    /** How long an entry of this kind is kept after it was made. */
    public Duration retention(Kind kind) {
        return kind == Kind.ID ? idRetention : sessionRetention;
    }

    /** The entries still in force, oldest first (what a caller persists). */
    public synchronized List<Entry> entries() {
        prune();
        List<Entry> out = new ArrayList<>(size());
        ids.forEach((k, at) -> out.add(new Entry(Kind.ID, k, at)));
        sessions.forEach((k, at) -> out.add(new Entry(Kind.SESSION, k, at)));
        out.sort(Comparator.comparing(Entry::revokedAt).thenComparing(Entry::id));
        return out;
    }

    /**
     * Puts back entries read from storage, keeping their original times (so their retention does not restart).
     * Entries already past their retention are dropped; the limit does not apply here: a restart never forgets
     * a revocation that is still in force, even if the limit was lowered meanwhile.
     */
    public synchronized void restore(List<Entry> restored) {
        for (Entry e : restored) {
            Map<String, Instant> map = e.kind() == Kind.ID ? ids : sessions;
            map.merge(e.id(), e.revokedAt(), (a, b) -> a.isAfter(b) ? a : b);
        }
        prune();
    }

    private void prune() {
        Instant now = clock.instant();
        Instant idCutoff = now.minus(idRetention);
        Instant sessionCutoff = now.minus(sessionRetention);
        ids.values().removeIf(at -> at.isBefore(idCutoff));
        sessions.values().removeIf(at -> at.isBefore(sessionCutoff));
    }
}
