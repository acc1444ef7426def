package dev.previewtunnel.grants;

import io.jsonwebtoken.Jwts;
import io.jsonwebtoken.security.Jwks;
import org.junit.jupiter.api.Test;

import java.security.KeyPair;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Issue 16 item 8: a revocation lasts as long as what it revokes could live (a 24 h connection token included),
 * a grant issued "in the future" is refused, the lifetime cap counts from the later of iat and nbf, and the list
 * is bounded without ever forgetting an entry to make room.
 */
class RevocationRetentionTest {
    private static final String ENV = "env-r";
    private static final String KID = "k-revoke000001";
    private static final Instant T0 = Instant.parse("2030-01-01T12:00:00Z");
    private static final VerifierPolicy POLICY = VerifierPolicy.defaults();

    private final KeyPair keyPair = Jwks.CRV.Ed25519.keyPair().build();
    private final VerificationKeys keys = new VerificationKeys(Map.of(KID, keyPair.getPublic()));
    private final MutableClock clock = new MutableClock(T0);
    private final GrantIssuer issuer = new GrantIssuer(new SigningKey(KID, keyPair.getPrivate()), clock);
    private final RevocationList revocations = new RevocationList(clock, POLICY);
    private final GrantVerifier verifier = new GrantVerifier(keys, clock, POLICY, revocations);

    @Test
    void aRevokedConnectionTokenStaysRefusedForAsLongAsItCouldBeValid() throws Exception {
        String token = issuer.issueConnectionToken(ENV, Duration.ofHours(24));
        VerifiedToken t = verifier.verifyConnectionToken(token, ENV);
        revocations.revokeGrant(t.jti());

        // Past the old retention (grant lifetime + skew = 15.5 min), with a write to trigger pruning.
        clock.advance(Duration.ofMinutes(16));
        revocations.revokeGrant("another-jti");
        assertEquals(GrantFailure.REVOKED, tokenFailure(token));

        // Until the token's own expiry (and skew) it stays refused.
        clock.set(T0.plus(Duration.ofHours(24)).plus(POLICY.clockSkew()));
        revocations.revokeGrant("yet-another-jti");
        assertEquals(GrantFailure.REVOKED, tokenFailure(token));
    }

    @Test
    void entriesAreDroppedOnlyAfterTheirRetention() {
        revocations.revokeGrant("jti-1");
        revocations.revokeSession("s1");
        Duration sessionKeep = revocations.retention(RevocationList.Kind.SESSION);
        Duration idKeep = revocations.retention(RevocationList.Kind.ID);
        assertEquals(Duration.ofMinutes(31), sessionKeep);
        assertEquals(Duration.ofHours(48).plusMinutes(1), idKeep);

        clock.advance(sessionKeep.plusSeconds(1));
        assertEquals(List.of("jti-1"), revocations.entries().stream().map(RevocationList.Entry::id).toList());
        clock.set(T0.plus(idKeep).plusSeconds(1));
        assertEquals(0, revocations.entries().size());
    }

    @Test
    void aGrantIssuedInTheFutureIsRefusedLikeAFutureNbf() {
        Map<String, Object> c = grantClaims(T0.plus(Duration.ofHours(1)), null,
                T0.plus(Duration.ofHours(1)).plus(Duration.ofMinutes(5)));
        GrantException e = assertThrows(GrantException.class,
                () -> verifier.verifyGrant(signed(c), ENV, "localhost:5173"));
        assertEquals(GrantFailure.NOT_YET_VALID, e.failure());
    }

    @Test
    void anIatWithinTheSkewIsAccepted() throws Exception {
        Instant iat = T0.plus(POLICY.clockSkew()).minusSeconds(1);
        verifier.verifyGrant(signed(grantClaims(iat, null, iat.plus(Duration.ofMinutes(5)))), ENV, "localhost:5173");
    }

    @Test
    void theLifetimeCapCountsFromTheLaterOfIatAndNbf() throws Exception {
        // Issued 10 min ago, valid from a minute ago for ten more: 20 min from iat, but 11 min of life.
        Map<String, Object> c = grantClaims(T0.minus(Duration.ofMinutes(10)),
                T0.minus(Duration.ofMinutes(1)), T0.plus(Duration.ofMinutes(10)));
        verifier.verifyGrant(signed(c), ENV, "localhost:5173");

        // Counted from nbf, a window longer than the cap is still refused.
        Map<String, Object> tooLong = grantClaims(T0.minus(Duration.ofMinutes(5)), T0.minus(Duration.ofMinutes(1)),
                T0.plus(Duration.ofMinutes(15)));
        assertEquals(GrantFailure.LIFETIME_TOO_LONG, assertThrows(GrantException.class,
                () -> verifier.verifyGrant(signed(tooLong), ENV, "localhost:5173")).failure());
    }

    @Test
    void anNbfMoreThanOneCapAfterIatIsRefused() {
        // Otherwise nbf could carry a grant past every retention: it must start within one cap of its issue.
        Map<String, Object> c = grantClaims(T0.minus(Duration.ofMinutes(20)), T0.minus(Duration.ofMinutes(4)),
                T0.plus(Duration.ofMinutes(5)));
        assertEquals(GrantFailure.LIFETIME_TOO_LONG, assertThrows(GrantException.class,
                () -> verifier.verifyGrant(signed(c), ENV, "localhost:5173")).failure());
    }

    @Test
    void aFullListRefusesNewEntriesAndForgetsNothing() {
        RevocationList small = new RevocationList(clock, POLICY, 2);
        small.revokeGrant("a");
        small.revokeSession("s");
        assertThrows(RevocationList.Full.class, () -> small.revokeGrant("b"));
        assertThrows(RevocationList.Full.class, () -> small.revokeSession("t"));
        small.revokeGrant("a"); // a repeat adds nothing: allowed
        assertEquals(2, small.size());
        assertEquals(true, small.isRevoked("a"));
        assertEquals(true, small.isSessionRevoked("s", T0));
        // Once entries expire, there is room again.
        clock.advance(small.retention(RevocationList.Kind.ID).plusSeconds(1));
        small.revokeGrant("b");
        assertEquals(1, small.size());
    }

    @Test
    void restoreKeepsOriginalTimesAndDropsExpiredEntries() {
        Duration idKeep = revocations.retention(RevocationList.Kind.ID);
        revocations.restore(List.of(
                new RevocationList.Entry(RevocationList.Kind.ID, "old", T0.minus(idKeep).minusSeconds(1)),
                new RevocationList.Entry(RevocationList.Kind.ID, "recent", T0.minus(Duration.ofHours(1))),
                new RevocationList.Entry(RevocationList.Kind.SESSION, "s", T0.minusSeconds(5))));
        assertEquals(List.of("recent", "s"), revocations.entries().stream().map(RevocationList.Entry::id).toList());
        assertEquals(T0.minus(Duration.ofHours(1)), revocations.entries().get(0).revokedAt());
    }

    private GrantFailure tokenFailure(String token) {
        return assertThrows(GrantException.class, () -> verifier.verifyConnectionToken(token, ENV)).failure();
    }

    private static Map<String, Object> grantClaims(Instant iat, Instant nbf, Instant exp) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("iss", GrantClaims.ISSUER);
        c.put("aud", GrantClaims.AUD_GRANT);
        c.put("env", ENV);
        c.put("sid", "sess-1");
        c.put("host", "localhost");
        c.put("port", 5173);
        c.put("proto", "tcp");
        c.put("iat", iat.getEpochSecond());
        if (nbf != null) c.put("nbf", nbf.getEpochSecond());
        c.put("exp", exp.getEpochSecond());
        c.put("jti", "jti-" + iat.getEpochSecond());
        return c;
    }

    private String signed(Map<String, Object> claims) {
        return Jwts.builder().header().type(GrantClaims.TYP_GRANT).keyId(KID).and()
                .claims(claims).signWith(keyPair.getPrivate(), Jwts.SIG.EdDSA).compact();
    }
}
