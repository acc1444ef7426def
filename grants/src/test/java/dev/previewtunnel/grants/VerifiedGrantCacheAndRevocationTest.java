package dev.previewtunnel.grants;

import io.jsonwebtoken.security.Jwks;
import org.junit.jupiter.api.Test;

import java.security.KeyPair;
import java.security.PublicKey;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The verifier remembers grants whose signature it already checked; these tests pin down that the cache never
 * weakens a check: binding, revocation, expiry and key removal all still apply to a remembered grant.
 */
class VerifiedGrantCacheAndRevocationTest {
    private static final String ENV = "env-1";
    private static final String KID = "k-cache0000001";
    private static final Instant T0 = Instant.parse("2030-01-01T12:00:00Z");

    private final KeyPair keyPair = Jwks.CRV.Ed25519.keyPair().build();
    private final Map<String, PublicKey> trusted = new HashMap<>(Map.of(KID, keyPair.getPublic()));
    private final VerificationKeysSource keys = kid -> Optional.ofNullable(trusted.get(kid));
    private final MutableClock clock = new MutableClock(T0);
    private final GrantIssuer issuer = new GrantIssuer(new SigningKey(KID, keyPair.getPrivate()), clock);
    private final RevocationList revocations = new RevocationList(clock, VerifierPolicy.defaults());
    private final GrantVerifier verifier = new GrantVerifier(keys, clock, VerifierPolicy.defaults(), revocations);

    private String grant(String session) {
        return issuer.issueGrant(GrantSpec.tcp(ENV, session, "localhost", 5173), Duration.ofMinutes(5));
    }

    private GrantFailure failure(String jwt, String env, String authority) {
        return assertThrows(GrantException.class, () -> verifier.verifyGrant(jwt, env, authority)).failure();
    }

    @Test
    void rememberedGrantIsStillBoundToEnvironmentAndTarget() throws Exception {
        String jwt = grant("s1");
        VerifiedGrant first = verifier.verifyGrant(jwt, ENV, "localhost:5173");
        assertEquals(first, verifier.verifyGrant(jwt, ENV, "localhost:5173"));
        assertEquals(GrantFailure.WRONG_TARGET, failure(jwt, ENV, "localhost:5174"));
        assertEquals(GrantFailure.WRONG_TARGET, failure(jwt, ENV, "127.0.0.1:5173"));
        assertEquals(GrantFailure.WRONG_ENVIRONMENT, failure(jwt, "env-2", "localhost:5173"));
    }

    @Test
    void rememberedGrantExpires() throws Exception {
        String jwt = grant("s1");
        verifier.verifyGrant(jwt, ENV, "localhost:5173");
        clock.advance(Duration.ofMinutes(5).plus(VerifierPolicy.defaults().clockSkew()).plusSeconds(1));
        assertEquals(GrantFailure.EXPIRED, failure(jwt, ENV, "localhost:5173"));
    }

    @Test
    void rememberedGrantIsDroppedWhenItsKeyIsNoLongerTrusted() throws Exception {
        String jwt = grant("s1");
        verifier.verifyGrant(jwt, ENV, "localhost:5173");
        trusted.remove(KID);
        assertEquals(GrantFailure.UNKNOWN_KEY, failure(jwt, ENV, "localhost:5173"));
    }

    @Test
    void revokingAGrantRefusesItEvenWhenRemembered() throws Exception {
        String jwt = grant("s1");
        VerifiedGrant g = verifier.verifyGrant(jwt, ENV, "localhost:5173");
        revocations.revokeGrant(g.jti());
        assertEquals(GrantFailure.REVOKED, failure(jwt, ENV, "localhost:5173"));
        // Another grant of the same session is unaffected.
        verifier.verifyGrant(grant("s1"), ENV, "localhost:5173");
    }

    @Test
    void revokingASessionRefusesItsEarlierGrantsButNotLaterOnes() throws Exception {
        String before = grant("s1");
        String otherSession = grant("s2");
        verifier.verifyGrant(before, ENV, "localhost:5173");
        clock.advance(Duration.ofSeconds(1));
        revocations.revokeSession("s1");
        assertEquals(GrantFailure.REVOKED, failure(before, ENV, "localhost:5173"));
        verifier.verifyGrant(otherSession, ENV, "localhost:5173");
        clock.advance(Duration.ofSeconds(1));
        verifier.verifyGrant(grant("s1"), ENV, "localhost:5173"); // re-granted after the revocation
    }

    @Test
    void revocationEntriesAreDroppedOnceTheGrantsTheyCoverHaveExpired() {
        revocations.revokeGrant("jti-1");
        revocations.revokeSession("s1");
        assertEquals(2, revocations.size());
        // A session entry covers grants only (2 x 15 min + 2 x skew); an id may name a 24 h token: kept longer.
        clock.advance(revocations.retention(RevocationList.Kind.SESSION).plusSeconds(1));
        revocations.revokeGrant("jti-2"); // pruning happens on write
        assertEquals(2, revocations.size());
    }
}
