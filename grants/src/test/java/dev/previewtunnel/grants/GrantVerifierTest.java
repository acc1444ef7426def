package dev.previewtunnel.grants;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.jsonwebtoken.JwtBuilder;
import io.jsonwebtoken.Jwts;
import io.jsonwebtoken.io.Decoders;
import io.jsonwebtoken.io.Encoders;
import io.jsonwebtoken.security.Jwks;
import io.jsonwebtoken.security.Keys;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GrantVerifierTest {
    private static final String ENV = "env-42";
    private static final String KID = "k-test00000001";
    private static final Instant T0 = Instant.parse("2030-01-01T12:00:00Z");
    private static final Duration FIVE_MIN = Duration.ofMinutes(5);

    private final KeyPair keyPair = Jwks.CRV.Ed25519.keyPair().build();
    private final SigningKey signingKey = new SigningKey(KID, keyPair.getPrivate());
    private final VerificationKeys keys = new VerificationKeys(Map.of(KID, keyPair.getPublic()));
    private final MutableClock issuerClock = new MutableClock(T0);
    private final MutableClock verifierClock = new MutableClock(T0);
    private final GrantIssuer issuer = new GrantIssuer(signingKey, issuerClock);
    private final GrantVerifier verifier = new GrantVerifier(keys, verifierClock, VerifierPolicy.defaults());

    private static GrantSpec spec() {
        return new GrantSpec(ENV, "sess-1", "localhost", 5173, "http", "claude", "thread-9");
    }

    private String grant() {
        return issuer.issueGrant(spec(), FIVE_MIN);
    }

    // ---- happy paths -------------------------------------------------------------------------

    @Test
    void grantRoundTrip() throws Exception {
        String jwt = grant();
        VerifiedGrant g = verifier.verifyGrant(jwt, ENV, "localhost:5173");
        assertEquals(ENV, g.environment());
        assertEquals("sess-1", g.session());
        assertEquals("localhost", g.targetHost());
        assertEquals(5173, g.targetPort());
        assertEquals("http", g.protocol());
        assertEquals("claude", g.provider());
        assertEquals("thread-9", g.thread());
        assertEquals(KID, g.kid());
        assertEquals(T0, g.issuedAt());
        assertEquals(T0.plus(FIVE_MIN), g.expiresAt());
        assertEquals(16, Decoders.BASE64URL.decode(g.jti()).length);
        assertFalse(g.toString().contains(jwt));
    }

    @Test
    void grantHeaderAndClaimsAreAsSpecified() throws Exception {
        String[] parts = grant().split("\\.");
        ObjectMapper json = new ObjectMapper();
        Map<?, ?> header = json.readValue(Decoders.BASE64URL.decode(parts[0]), Map.class);
        Map<?, ?> claims = json.readValue(Decoders.BASE64URL.decode(parts[1]), Map.class);
        assertEquals("EdDSA", header.get("alg"));
        assertEquals(KID, header.get("kid"));
        assertEquals("ptun-grant+jwt", header.get("typ"));
        assertEquals("ptun", claims.get("iss"));
        assertTrue(String.valueOf(claims.get("aud")).contains("ptun-grant"));
        assertEquals(5173, claims.get("port"));
        assertEquals("http", claims.get("proto"));
        assertEquals("claude", claims.get("prv"));
        assertEquals("thread-9", claims.get("thr"));
        assertEquals(claims.get("iat"), claims.get("nbf"));
        assertEquals(((Number) claims.get("iat")).longValue() + 300, ((Number) claims.get("exp")).longValue());
    }

    @Test
    void tcpIsTheDefaultProtocolAndOptionalClaimsMayBeAbsent() throws Exception {
        String jwt = issuer.issueGrant(new GrantSpec(ENV, "s", "127.0.0.1", 8080, null, null, null), FIVE_MIN);
        VerifiedGrant g = verifier.verifyGrant(jwt, ENV, "127.0.0.1:8080");
        assertEquals("tcp", g.protocol());
        assertNull(g.provider());
        assertNull(g.thread());
    }

    @Test
    void connectionTokenRoundTrip() throws Exception {
        String jwt = issuer.issueConnectionToken(ENV, Duration.ofHours(24));
        VerifiedToken t = verifier.verifyConnectionToken(jwt, ENV);
        assertEquals(ENV, t.environment());
        assertEquals(KID, t.kid());
        assertEquals(T0.plus(Duration.ofHours(24)), t.expiresAt());
        assertFalse(t.toString().contains(jwt));
    }

    @Test
    void ipv6AuthorityMatchesInBracketForm() throws Exception {
        String jwt = issuer.issueGrant(GrantSpec.tcp(ENV, "s", "::1", 5173), FIVE_MIN);
        assertEquals("::1", verifier.verifyGrant(jwt, ENV, "[::1]:5173").targetHost());
        assertEquals("::1", verifier.verifyGrant(jwt, ENV, "[0:0:0:0:0:0:0:1]:5173").targetHost());
        String bracketed = issuer.issueGrant(GrantSpec.tcp(ENV, "s", "[::1]", 5173), FIVE_MIN);
        verifier.verifyGrant(bracketed, ENV, "[::1]:5173");
        expectFailure(GrantFailure.WRONG_TARGET, jwt, () -> verifier.verifyGrant(jwt, ENV, "[::2]:5173"));
        expectFailure(GrantFailure.WRONG_TARGET, jwt, () -> verifier.verifyGrant(jwt, ENV, "::1:5173"));
    }

    @Test
    void dnsHostIsComparedCaseInsensitively() throws Exception {
        String jwt = grant();
        verifier.verifyGrant(jwt, ENV, "LocalHost:5173");
    }

    // ---- every failure ----------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", "\t"})
    void missing(String jwt) {
        expectFailure(GrantFailure.MISSING, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
        expectFailure(GrantFailure.MISSING, jwt, () -> verifier.verifyConnectionToken(jwt, ENV));
    }

    @Test
    void missingNull() {
        expectFailure(GrantFailure.MISSING, "-", () -> verifier.verifyGrant(null, ENV, "localhost:5173"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"abc", "a.b", "a.b.c", "..", "a..c", ".b.c", "a.b.c.d", "a.b.c.d.e", "eyJ.eyJ.x",
            "Bearer xyz", "e30.e30.", "bnVsbA.e30.e30", "W10.e30.e30", "{\"alg\":\"EdDSA\"}.e30.e30", "\u00ff\u00fe.a.b"})
    void garbageIsMalformed(String jwt) {
        expectFailure(GrantFailure.MALFORMED, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
    }

    @Test
    void oversizedTokenIsRefusedBeforeParsing() {
        String huge = "a".repeat(VerifierPolicy.DEFAULT_MAX_TOKEN_LENGTH + 1);
        expectFailure(GrantFailure.MALFORMED, huge, () -> verifier.verifyGrant(huge, ENV, "localhost:5173"));
        // A genuinely signed but oversized grant is refused too.
        String big = issuer.issueGrant(new GrantSpec(ENV, "s".repeat(7000), "localhost", 5173, null, null, null),
                FIVE_MIN);
        assertTrue(big.length() > VerifierPolicy.DEFAULT_MAX_TOKEN_LENGTH);
        expectFailure(GrantFailure.MALFORMED, big, () -> verifier.verifyGrant(big, ENV, "localhost:5173"));
    }

    @Test
    void wrongTypIsMalformed() {
        String jwt = signed(grantClaims(), "JWT", KID, keyPair);
        expectFailure(GrantFailure.MALFORMED, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
        String noTyp = signed(grantClaims(), null, KID, keyPair);
        expectFailure(GrantFailure.MALFORMED, noTyp, () -> verifier.verifyGrant(noTyp, ENV, "localhost:5173"));
    }

    @Test
    void duplicateHeaderNamesAreMalformed() {
        String[] parts = grant().split("\\.");
        String header = "{\"alg\":\"HS256\",\"alg\":\"EdDSA\",\"typ\":\"ptun-grant+jwt\",\"kid\":\"" + KID + "\"}";
        String jwt = b64(header) + "." + parts[1] + "." + parts[2];
        expectFailure(GrantFailure.MALFORMED, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
    }

    @Test
    void algNoneIsRefused() {
        // Built with JJWT: no signWith() gives an unsecured JWT ({"alg":"none"}, empty signature).
        String jwt = Jwts.builder().header().type(GrantClaims.TYP_GRANT).keyId(KID).and()
                .claims(grantClaims()).compact();
        assertTrue(jwt.endsWith("."));
        expectFailure(GrantFailure.BAD_ALGORITHM, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
        // Same, keeping a real grant's signature segment.
        String[] parts = grant().split("\\.");
        String header = b64("{\"alg\":\"none\",\"typ\":\"ptun-grant+jwt\",\"kid\":\"" + KID + "\"}");
        String withSig = header + "." + parts[1] + "." + parts[2];
        expectFailure(GrantFailure.BAD_ALGORITHM, withSig, () -> verifier.verifyGrant(withSig, ENV, "localhost:5173"));
        String noSig = header + "." + parts[1] + ".";
        expectFailure(GrantFailure.BAD_ALGORITHM, noSig, () -> verifier.verifyGrant(noSig, ENV, "localhost:5173"));
    }

    @Test
    void hs256AlgorithmConfusionWithThePublicKeyIsRefused() {
        byte[] publicKeyBytes = keyPair.getPublic().getEncoded(); // X.509 SubjectPublicKeyInfo, 44 bytes
        assertEquals(44, publicKeyBytes.length);
        String jwt = Jwts.builder().header().type(GrantClaims.TYP_GRANT).keyId(KID).and()
                .claims(grantClaims())
                .signWith(Keys.hmacShaKeyFor(publicKeyBytes), Jwts.SIG.HS256)
                .compact();
        expectFailure(GrantFailure.BAD_ALGORITHM, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
    }

    @Test
    void rs256UnderTheSameKidIsRefused() {
        KeyPair rsa = Jwts.SIG.RS256.keyPair().build();
        String jwt = Jwts.builder().header().type(GrantClaims.TYP_GRANT).keyId(KID).and()
                .claims(grantClaims())
                .signWith(rsa.getPrivate(), Jwts.SIG.RS256)
                .compact();
        expectFailure(GrantFailure.BAD_ALGORITHM, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
    }

    @Test
    void unknownOrMissingKid() {
        String jwt = signed(grantClaims(), GrantClaims.TYP_GRANT, "k-nobody", keyPair);
        expectFailure(GrantFailure.UNKNOWN_KEY, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
        String noKid = signed(grantClaims(), GrantClaims.TYP_GRANT, null, keyPair);
        expectFailure(GrantFailure.UNKNOWN_KEY, noKid, () -> verifier.verifyGrant(noKid, ENV, "localhost:5173"));
        GrantVerifier empty = new GrantVerifier(new VerificationKeys(Map.of()), verifierClock, VerifierPolicy.defaults());
        String real = grant();
        expectFailure(GrantFailure.UNKNOWN_KEY, real, () -> empty.verifyGrant(real, ENV, "localhost:5173"));
    }

    @Test
    void tamperedPayloadFailsTheSignature() {
        String jwt = grant();
        String[] parts = jwt.split("\\.");
        // Flip one character in the middle of the payload segment.
        char[] payload = parts[1].toCharArray();
        int i = payload.length / 2;
        payload[i] = payload[i] == 'A' ? 'B' : 'A';
        String flipped = parts[0] + "." + new String(payload) + "." + parts[2];
        expectFailure(GrantFailure.BAD_SIGNATURE, flipped, () -> verifier.verifyGrant(flipped, ENV, "localhost:5173"));
        // A well-formed but edited payload (another port), original signature kept.
        String json = new String(Decoders.BASE64URL.decode(parts[1]), StandardCharsets.UTF_8).replace("5173", "6000");
        String edited = parts[0] + "." + b64(json) + "." + parts[2];
        expectFailure(GrantFailure.BAD_SIGNATURE, edited, () -> verifier.verifyGrant(edited, ENV, "localhost:6000"));
    }

    @Test
    void tamperedSignatureFails() {
        String jwt = grant();
        int dot = jwt.lastIndexOf('.');
        char[] chars = jwt.toCharArray();
        int i = dot + 10;
        chars[i] = chars[i] == 'A' ? 'B' : 'A';
        String tampered = new String(chars);
        expectFailure(GrantFailure.BAD_SIGNATURE, tampered, () -> verifier.verifyGrant(tampered, ENV, "localhost:5173"));
    }

    @Test
    void signatureByAnotherEd25519KeyUnderOurKidFails() {
        String jwt = signed(grantClaims(), GrantClaims.TYP_GRANT, KID, Jwks.CRV.Ed25519.keyPair().build());
        expectFailure(GrantFailure.BAD_SIGNATURE, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
    }

    @Test
    void connectionTokenCannotBeUsedAsGrantNorViceVersa() {
        String token = issuer.issueConnectionToken(ENV, FIVE_MIN);
        expectFailure(GrantFailure.WRONG_AUDIENCE, token, () -> verifier.verifyGrant(token, ENV, "localhost:5173"));
        String grant = grant();
        expectFailure(GrantFailure.WRONG_AUDIENCE, grant, () -> verifier.verifyConnectionToken(grant, ENV));
    }

    @Test
    void wrongAudienceIsReportedBeforeExpiry() {
        String token = issuer.issueConnectionToken(ENV, FIVE_MIN);
        verifierClock.advance(Duration.ofHours(1));
        expectFailure(GrantFailure.WRONG_AUDIENCE, token, () -> verifier.verifyGrant(token, ENV, "localhost:5173"));
    }

    @Test
    void audienceClaimMustBePresentAndRight() {
        Map<String, Object> claims = grantClaims();
        claims.remove("aud");
        String noAud = signed(claims, GrantClaims.TYP_GRANT, KID, keyPair);
        expectFailure(GrantFailure.WRONG_AUDIENCE, noAud, () -> verifier.verifyGrant(noAud, ENV, "localhost:5173"));
        claims.put("aud", "someone-else");
        String other = signed(claims, GrantClaims.TYP_GRANT, KID, keyPair);
        expectFailure(GrantFailure.WRONG_AUDIENCE, other, () -> verifier.verifyGrant(other, ENV, "localhost:5173"));
    }

    @Test
    void expiredBeyondSkewFailsButWithinSkewPasses() throws Exception {
        String jwt = grant();
        verifierClock.set(T0.plus(FIVE_MIN).plusSeconds(29));
        verifier.verifyGrant(jwt, ENV, "localhost:5173");
        verifierClock.set(T0.plus(FIVE_MIN).plusSeconds(31));
        expectFailure(GrantFailure.EXPIRED, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
    }

    @Test
    void expiredConnectionToken() {
        String jwt = issuer.issueConnectionToken(ENV, FIVE_MIN);
        verifierClock.advance(Duration.ofMinutes(6));
        expectFailure(GrantFailure.EXPIRED, jwt, () -> verifier.verifyConnectionToken(jwt, ENV));
    }

    @Test
    void missingExpIsExpired() {
        Map<String, Object> claims = grantClaims();
        claims.remove("exp");
        String jwt = signed(claims, GrantClaims.TYP_GRANT, KID, keyPair);
        expectFailure(GrantFailure.EXPIRED, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
    }

    @Test
    void notYetValidBeyondSkewFailsButWithinSkewPasses() throws Exception {
        issuerClock.set(T0.plusSeconds(20));
        verifier.verifyGrant(grant(), ENV, "localhost:5173");
        issuerClock.set(T0.plusSeconds(60));
        String early = grant();
        expectFailure(GrantFailure.NOT_YET_VALID, early, () -> verifier.verifyGrant(early, ENV, "localhost:5173"));
    }

    @Test
    void lifetimeTooLong() {
        String jwt = issuer.issueGrant(spec(), Duration.ofMinutes(16));
        expectFailure(GrantFailure.LIFETIME_TOO_LONG, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
        GrantVerifier strict = new GrantVerifier(keys, verifierClock,
                new VerifierPolicy(Duration.ofSeconds(30), Duration.ofMinutes(15), Duration.ofHours(1), 8192));
        String token = issuer.issueConnectionToken(ENV, Duration.ofHours(2));
        expectFailure(GrantFailure.LIFETIME_TOO_LONG, token, () -> strict.verifyConnectionToken(token, ENV));
    }

    @Test
    void wrongEnvironment() {
        String jwt = grant();
        expectFailure(GrantFailure.WRONG_ENVIRONMENT, jwt, () -> verifier.verifyGrant(jwt, "env-43", "localhost:5173"));
        String token = issuer.issueConnectionToken(ENV, FIVE_MIN);
        expectFailure(GrantFailure.WRONG_ENVIRONMENT, token, () -> verifier.verifyConnectionToken(token, "env-43"));
    }

    @Test
    void wrongHostOrPort() {
        String jwt = grant();
        expectFailure(GrantFailure.WRONG_TARGET, jwt, () -> verifier.verifyGrant(jwt, ENV, "127.0.0.1:5173"));
        expectFailure(GrantFailure.WRONG_TARGET, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5174"));
        expectFailure(GrantFailure.WRONG_TARGET, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost"));
        expectFailure(GrantFailure.WRONG_TARGET, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost.:5173"));
        expectFailure(GrantFailure.WRONG_TARGET, jwt, () -> verifier.verifyGrant(jwt, ENV, null));
    }

    @Test
    void revoked() {
        String jwt = grant();
        String jti = UnverifiedGrantView.decode(jwt).jti();
        GrantVerifier withRevocations = new GrantVerifier(keys, verifierClock, VerifierPolicy.defaults(),
                Set.of(jti)::contains);
        expectFailure(GrantFailure.REVOKED, jwt, () -> withRevocations.verifyGrant(jwt, ENV, "localhost:5173"));
    }

    @Test
    void missingRequiredClaimsAreMalformed() {
        for (String name : new String[]{"env", "sid", "host", "port", "proto", "jti", "iat"}) {
            Map<String, Object> claims = grantClaims();
            claims.remove(name);
            String jwt = signed(claims, GrantClaims.TYP_GRANT, KID, keyPair);
            expectFailure(GrantFailure.MALFORMED, jwt, () -> verifier.verifyGrant(jwt, ENV, "localhost:5173"));
        }
        Map<String, Object> claims = grantClaims();
        claims.put("port", "5173");
        String stringPort = signed(claims, GrantClaims.TYP_GRANT, KID, keyPair);
        expectFailure(GrantFailure.MALFORMED, stringPort, () -> verifier.verifyGrant(stringPort, ENV, "localhost:5173"));
        claims = grantClaims();
        claims.put("iss", "someone-else");
        String wrongIssuer = signed(claims, GrantClaims.TYP_GRANT, KID, keyPair);
        expectFailure(GrantFailure.MALFORMED, wrongIssuer, () -> verifier.verifyGrant(wrongIssuer, ENV, "localhost:5173"));
    }

    // ---- issuing validation -----------------------------------------------------------------

    @Test
    void issuerValidatesInputs() {
        assertThrows(IllegalArgumentException.class, () -> GrantSpec.tcp(" ", "s", "localhost", 1));
        assertThrows(IllegalArgumentException.class, () -> GrantSpec.tcp(ENV, "", "localhost", 1));
        assertThrows(IllegalArgumentException.class, () -> GrantSpec.tcp(ENV, "s", " ", 1));
        assertThrows(IllegalArgumentException.class, () -> GrantSpec.tcp(ENV, "s", "local host", 1));
        assertThrows(IllegalArgumentException.class, () -> GrantSpec.tcp(ENV, "s", "localhost", 0));
        assertThrows(IllegalArgumentException.class, () -> GrantSpec.tcp(ENV, "s", "localhost", 65536));
        assertThrows(IllegalArgumentException.class, () -> new GrantSpec(ENV, "s", "localhost", 1, "udp", null, null));
        assertThrows(IllegalArgumentException.class, () -> issuer.issueGrant(spec(), Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> issuer.issueGrant(spec(), Duration.ofSeconds(-5)));
        assertThrows(IllegalArgumentException.class, () -> issuer.issueGrant(spec(), Duration.ofHours(24).plusSeconds(1)));
        assertThrows(IllegalArgumentException.class, () -> issuer.issueConnectionToken(" ", FIVE_MIN));
        issuer.issueGrant(spec(), Duration.ofHours(24)); // the cap itself is allowed
    }

    @Test
    void failureCodes() {
        assertEquals("grant_expired", GrantFailure.EXPIRED.code());
        assertEquals("grant_bad_signature", GrantFailure.BAD_SIGNATURE.code());
        assertEquals("grant_wrong_target", GrantFailure.WRONG_TARGET.code());
        assertEquals("grant_not_yet_valid", GrantFailure.NOT_YET_VALID.code());
    }

    // ---- helpers -------------------------------------------------------------------------------

    /** Asserts the failure reason, and that the message leaks no part of the token. */
    private static void expectFailure(GrantFailure expected, String jwt, Executable call) {
        GrantException e = assertThrows(GrantException.class, call);
        assertEquals(expected, e.failure(), () -> "message was: " + e.getMessage());
        assertTrue(e.getMessage().startsWith(expected.code()), e.getMessage());
        assertNull(e.getCause());
        if (jwt != null && jwt.length() >= 8) {
            assertFalse(e.getMessage().contains(jwt), "message contains the token");
            for (String part : jwt.split("\\.")) {
                if (part.length() >= 8) assertFalse(e.getMessage().contains(part), "message contains a token segment");
            }
        }
    }

    private Map<String, Object> grantClaims() {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("iss", "ptun");
        c.put("aud", "ptun-grant");
        c.put("env", ENV);
        c.put("sid", "sess-1");
        c.put("host", "localhost");
        c.put("port", 5173);
        c.put("proto", "tcp");
        c.put("iat", T0.getEpochSecond());
        c.put("nbf", T0.getEpochSecond());
        c.put("exp", T0.plus(FIVE_MIN).getEpochSecond());
        c.put("jti", "test-jti");
        return c;
    }

    private static String signed(Map<String, Object> claims, String typ, String kid, KeyPair pair) {
        JwtBuilder b = Jwts.builder();
        if (typ != null) b.header().type(typ);
        if (kid != null) b.header().keyId(kid);
        return b.claims(claims).signWith(pair.getPrivate(), Jwts.SIG.EdDSA).compact();
    }

    private static String b64(String json) {
        return Encoders.BASE64URL.encode(json.getBytes(StandardCharsets.UTF_8));
    }
}
