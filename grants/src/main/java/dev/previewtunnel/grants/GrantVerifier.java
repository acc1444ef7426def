package dev.previewtunnel.grants;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.json.JsonTrees;
import io.jsonwebtoken.Claims;
import io.jsonwebtoken.ExpiredJwtException;
import io.jsonwebtoken.IncorrectClaimException;
import io.jsonwebtoken.Jws;
import io.jsonwebtoken.JwsHeader;
import io.jsonwebtoken.JwtException;
import io.jsonwebtoken.JwtParser;
import io.jsonwebtoken.Jwts;
import io.jsonwebtoken.LocatorAdapter;
import io.jsonwebtoken.MissingClaimException;
import io.jsonwebtoken.PrematureJwtException;
import io.jsonwebtoken.io.Decoders;
import io.jsonwebtoken.security.SecurityException;

import java.security.Key;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.Objects;
import java.util.Set;

/**
 * Verifies grants and connection tokens. Thread-safe; build one per gateway.
 *
 * <p>Checks run in a fixed order so the reported {@link GrantFailure} is predictable:
 * missing, length (before any parsing), shape and {@code typ}, {@code alg} (EdDSA only), {@code kid},
 * signature, audience, expiry, not-before, issued-at not in the future, lifetime cap, required claims, environment, target, revocation.
 * The header is pre-read with Jackson only to give precise reasons; the decision itself is JJWT's
 * (restricted to EdDSA, keys located by kid) plus the claim checks here.
 *
 * <p>No message produced here contains the token, a JJWT message, or a cause.
 */
public final class GrantVerifier {
    private static final Set<String> OUR_TYPES = Set.of(GrantClaims.TYP_GRANT, GrantClaims.TYP_TOKEN);

    /** Upper bound on remembered verified grants (see {@link #recentlyVerified}). */
    static final int VERIFIED_CACHE_SIZE = 4096;

    private final VerificationKeysSource keys;
    private final java.util.concurrent.ConcurrentHashMap<String, CachedGrant> verifiedGrants =
            new java.util.concurrent.ConcurrentHashMap<>();
    private final Clock clock;
    private final VerifierPolicy policy;
    private final RevokedGrants revoked;
    private final Kind grant;
    private final Kind token;

    /** What distinguishes a grant from a connection token during verification. */
    private record Kind(String typ, String audience, Duration maxLifetime, JwtParser parser) {
    }

    /** Everything both kinds share once the JWS and its time claims have been checked. */
    private record Checked(Claims claims, String kid, Instant issuedAt, Instant expiresAt) {
    }

    public GrantVerifier(VerificationKeysSource keys, Clock clock, VerifierPolicy policy) {
        this(keys, clock, policy, RevokedGrants.NONE);
    }

    public GrantVerifier(VerificationKeysSource keys, Clock clock, VerifierPolicy policy, RevokedGrants revoked) {
        this.keys = Objects.requireNonNull(keys, "keys");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.policy = Objects.requireNonNull(policy, "policy");
        this.revoked = Objects.requireNonNull(revoked, "revoked");
        this.grant = new Kind(GrantClaims.TYP_GRANT, GrantClaims.AUD_GRANT, policy.maxGrantLifetime(),
                parser(keys, GrantClaims.AUD_GRANT));
        this.token = new Kind(GrantClaims.TYP_TOKEN, GrantClaims.AUD_CONNECT, policy.maxTokenLifetime(),
                parser(keys, GrantClaims.AUD_CONNECT));
    }

    /**
     * @param authority the request's {@code host:port} (HTTP/2 {@code :authority}; IPv6 bracketed)
     */
    public VerifiedGrant verifyGrant(String jwt, String expectedEnvironment, String authority) throws GrantException {
        Objects.requireNonNull(expectedEnvironment, "expectedEnvironment");
        VerifiedGrant verified = recentlyVerified(jwt);
        if (verified == null) {
            verified = verifySignedGrant(jwt);
            remember(jwt, verified);
        }
        return bind(verified, expectedEnvironment, authority);
    }

    /**
     * A grant whose signature and claims were verified before and that is still within its lifetime, or
     * null. The same grant opens many streams (a page load, reconnects); re-verifying an Ed25519 signature
     * each time cost about 0.9 ms of event-loop time per stream. The binding checks (environment, target,
     * revocation) still run on every stream, and a hit is dropped when the key that verified it is no longer
     * trusted (rotated out of the key set).
     */
    private VerifiedGrant recentlyVerified(String jwt) {
        if (jwt == null) {
            return null;
        }
        CachedGrant hit = verifiedGrants.get(jwt);
        if (hit == null) {
            return null;
        }
        Instant now = clock.instant();
        boolean expired = now.isAfter(hit.grant().expiresAt().plus(policy.clockSkew()));
        boolean keyStillTrusted = keys.find(hit.grant().kid()).map(k -> k.equals(hit.key())).orElse(false);
        if (expired || !keyStillTrusted) {
            verifiedGrants.remove(jwt);
            return null;
        }
        return hit.grant();
    }

    private void remember(String jwt, VerifiedGrant grant) {
        if (verifiedGrants.size() >= VERIFIED_CACHE_SIZE) {
            verifiedGrants.clear(); // bounded memory; a full cache is rare (thousands of live grants)
        }
        keys.find(grant.kid()).ifPresent(key -> verifiedGrants.put(jwt, new CachedGrant(grant, key)));
    }

    private record CachedGrant(VerifiedGrant grant, java.security.PublicKey key) {
    }

    /** Signature, algorithm, key, audience, type, lifetime and claim shape: everything not bound to a stream. */
    private VerifiedGrant verifySignedGrant(String jwt) throws GrantException {
        Checked c = verifyCommon(jwt, grant);
        Claims claims = c.claims();
        String env = requiredString(claims, GrantClaims.ENV);
        String session = requiredString(claims, GrantClaims.SESSION);
        String host = requiredString(claims, GrantClaims.HOST);
        int port = requiredPort(claims);
        String protocol = requiredString(claims, GrantClaims.PROTOCOL);
        if (!GrantSpec.TCP.equals(protocol) && !GrantSpec.HTTP.equals(protocol)) {
            throw new GrantException(GrantFailure.MALFORMED, "unknown proto");
        }
        String provider = optionalString(claims, GrantClaims.PROVIDER);
        String thread = optionalString(claims, GrantClaims.THREAD);
        String jti = requiredString(claims, "jti");
        String normalisedHost;
        try {
            normalisedHost = TargetHost.normalise(host);
        } catch (IllegalArgumentException e) {
            throw new GrantException(GrantFailure.MALFORMED, "invalid host claim");
        }
        return new VerifiedGrant(env, session, normalisedHost, port, protocol, provider, thread, jti, c.kid(),
                c.issuedAt(), c.expiresAt());
    }

    /** The per-stream checks: this gateway's environment, exactly this target, not revoked. */
    private VerifiedGrant bind(VerifiedGrant g, String expectedEnvironment, String authority) throws GrantException {
        if (!g.environment().equals(expectedEnvironment)) {
            throw new GrantException(GrantFailure.WRONG_ENVIRONMENT, "grant is for another environment");
        }
        TargetHost.Canonical requested;
        try {
            requested = TargetHost.parseAuthority(authority);
        } catch (IllegalArgumentException e) {
            throw new GrantException(GrantFailure.WRONG_TARGET, "authority is not host:port");
        }
        if (!requested.host().equals(g.targetHost()) || requested.port() != g.targetPort()) {
            throw new GrantException(GrantFailure.WRONG_TARGET, "authority does not match the granted target");
        }
        if (revoked.isRevoked(g.jti()) || revoked.isSessionRevoked(g.session(), g.issuedAt())) {
            throw new GrantException(GrantFailure.REVOKED, "grant revoked");
        }
        return g;
    }

    public VerifiedToken verifyConnectionToken(String jwt, String expectedEnvironment) throws GrantException {
        Objects.requireNonNull(expectedEnvironment, "expectedEnvironment");
        Checked c = verifyCommon(jwt, token);
        String env = requiredString(c.claims(), GrantClaims.ENV);
        String jti = requiredString(c.claims(), "jti");
        if (!env.equals(expectedEnvironment)) {
            throw new GrantException(GrantFailure.WRONG_ENVIRONMENT, "token is for another environment");
        }
        if (revoked.isRevoked(jti)) {
            throw new GrantException(GrantFailure.REVOKED, "token revoked");
        }
        return new VerifiedToken(env, jti, c.kid(), c.expiresAt());
    }

    private Checked verifyCommon(String jwt, Kind kind) throws GrantException {
        if (jwt == null || jwt.isBlank()) {
            throw new GrantException(GrantFailure.MISSING, "no token");
        }
        if (jwt.length() > policy.maxTokenLength()) {
            throw new GrantException(GrantFailure.MALFORMED, "token longer than " + policy.maxTokenLength() + " chars");
        }
        String kid = preflightHeader(jwt);

        Jws<Claims> jws;
        try {
            jws = kind.parser().parseSignedClaims(jwt);
        } catch (ExpiredJwtException e) {
            // JJWT checks exp before aud; report a token of the wrong kind as such even when also expired.
            requireAudience(e.getClaims(), kind);
            throw new GrantException(GrantFailure.EXPIRED, "expired beyond allowed clock skew");
        } catch (PrematureJwtException e) {
            requireAudience(e.getClaims(), kind);
            throw new GrantException(GrantFailure.NOT_YET_VALID, "not valid yet (nbf beyond allowed clock skew)");
        } catch (IncorrectClaimException | MissingClaimException e) {
            if ("aud".equals(e.getClaimName())) {
                throw new GrantException(GrantFailure.WRONG_AUDIENCE, "not a " + kind.audience() + " token");
            }
            throw new GrantException(GrantFailure.MALFORMED, "bad " + safe(e.getClaimName()) + " claim");
        } catch (JwtException | IllegalArgumentException e) {
            throw mapParseFailure(e);
        }
        if (!kind.typ().equals(jws.getHeader().getType())) {
            throw new GrantException(GrantFailure.WRONG_AUDIENCE, "not a " + kind.audience() + " token");
        }

        Claims claims = jws.getPayload();
        Instant exp = instant(claims, "exp");
        Instant iat = instant(claims, "iat");
        Instant nbf = instant(claims, "nbf");
        if (exp == null) {
            throw new GrantException(GrantFailure.EXPIRED, "no exp claim");
        }
        if (iat == null || exp.isBefore(iat)) {
            throw new GrantException(GrantFailure.MALFORMED, "missing or inconsistent iat claim");
        }
        // A future iat would let exp - iat pass the cap while the grant is usable from now on: refuse it like a
        // future nbf. With both iat and nbf at most now + skew, every accepted grant or token ends within
        // skew + 2 x cap of its iat (the cap counts from the later of iat and nbf, and nbf may lie at most one cap
        // after iat), which is what RevocationList's retention is sized on.
        if (iat.isAfter(clock.instant().plus(policy.clockSkew()))) {
            throw new GrantException(GrantFailure.NOT_YET_VALID, "issued in the future (iat beyond allowed clock skew)");
        }
        if (nbf != null && Duration.between(iat, nbf).compareTo(kind.maxLifetime()) > 0) {
            throw new GrantException(GrantFailure.LIFETIME_TOO_LONG,
                    "nbf lies more than " + kind.maxLifetime().toSeconds() + "s after iat");
        }
        Instant start = nbf != null && nbf.isAfter(iat) ? nbf : iat;
        if (Duration.between(start, exp).compareTo(kind.maxLifetime()) > 0) {
            throw new GrantException(GrantFailure.LIFETIME_TOO_LONG,
                    "lifetime exceeds " + kind.maxLifetime().toSeconds() + "s");
        }
        return new Checked(claims, kid, iat, exp);
    }

    /**
     * Reads the protected header before JJWT does, to report shape, typ, alg and kid problems precisely.
     * Returns the kid. An empty signature segment is let through here so that {@code alg:none} is
     * reported as BAD_ALGORITHM rather than MALFORMED.
     */
    private static String preflightHeader(String jwt) throws GrantException {
        int dot1 = jwt.indexOf('.');
        int dot2 = dot1 < 0 ? -1 : jwt.indexOf('.', dot1 + 1);
        if (dot1 <= 0 || dot2 < 0 || dot2 == dot1 + 1 || jwt.indexOf('.', dot2 + 1) >= 0) {
            throw new GrantException(GrantFailure.MALFORMED, "not a compact JWS");
        }
        JsonNode header;
        try {
            // Repeated header names (and text after the object) are refused, so this pre-read cannot disagree with
            // JJWT's own parse, which refuses them too (JjwtJson).
            header = JsonTrees.parseStrict(Decoders.BASE64URL.decode(jwt.substring(0, dot1)));
        } catch (Exception e) { // decoding or JSON: either way not a JWS; the cause may quote input
            throw new GrantException(GrantFailure.MALFORMED, "header is not base64url JSON");
        }
        if (header == null || !header.isObject()) {
            throw new GrantException(GrantFailure.MALFORMED, "header is not a JSON object");
        }
        JsonNode typ = header.get("typ");
        if (typ == null || !typ.isTextual() || !OUR_TYPES.contains(typ.textValue())) {
            throw new GrantException(GrantFailure.MALFORMED, "unexpected typ");
        }
        JsonNode alg = header.get("alg");
        if (alg == null || !alg.isTextual()) {
            throw new GrantException(GrantFailure.MALFORMED, "no alg");
        }
        if (!GrantClaims.ALG.equals(alg.textValue())) {
            throw new GrantException(GrantFailure.BAD_ALGORITHM, "alg " + safe(alg.textValue()) + " not accepted");
        }
        JsonNode kid = header.get("kid");
        if (kid == null || !kid.isTextual() || kid.textValue().isBlank()) {
            throw new GrantException(GrantFailure.UNKNOWN_KEY, "no kid");
        }
        return kid.textValue();
    }

    private static GrantException mapParseFailure(RuntimeException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof Refusal r) return new GrantException(r.failure, r.detail);
        }
        if (e instanceof SecurityException) { // includes JJWT's SignatureException
            return new GrantException(GrantFailure.BAD_SIGNATURE, "signature does not verify");
        }
        return new GrantException(GrantFailure.MALFORMED, "not a valid signed JWT");
    }

    private static void requireAudience(Claims claims, Kind kind) throws GrantException {
        Set<String> aud;
        try {
            aud = claims.getAudience();
        } catch (RuntimeException e) {
            aud = null;
        }
        if (aud == null || !aud.contains(kind.audience())) {
            throw new GrantException(GrantFailure.WRONG_AUDIENCE, "not a " + kind.audience() + " token");
        }
    }

    private JwtParser parser(VerificationKeysSource keys, String audience) {
        return Jwts.parser()
                .sig().clear().add(Jwts.SIG.EdDSA).and() // nothing else can even be attempted
                .keyLocator(new KidLocator(keys))
                .clock(() -> Date.from(clock.instant()))
                .clockSkewSeconds(policy.clockSkew().toSeconds())
                .requireAudience(audience)
                .requireIssuer(GrantClaims.ISSUER)
                .build();
        // Deliberately no .unsecured(): JJWT then rejects alg:none outright.
    }

    /**
     * Picks the verification key by kid, and only for EdDSA: the key type and the header's algorithm
     * are tied here so a public key can never be handed to an HMAC or RSA verifier.
     */
    private static final class KidLocator extends LocatorAdapter<Key> {
        private final VerificationKeysSource keys;

        KidLocator(VerificationKeysSource keys) {
            this.keys = keys;
        }

        @Override
        protected Key locate(JwsHeader header) {
            if (!GrantClaims.ALG.equals(header.getAlgorithm())) {
                throw new Refusal(GrantFailure.BAD_ALGORITHM, "alg " + safe(header.getAlgorithm()) + " not accepted");
            }
            String kid = header.getKeyId();
            if (kid == null) throw new Refusal(GrantFailure.UNKNOWN_KEY, "no kid");
            return keys.find(kid).orElseThrow(() -> new Refusal(GrantFailure.UNKNOWN_KEY, "unknown kid " + safe(kid)));
        }
    }

    /** Thrown through JJWT by the locator; turned into a GrantException by {@link #mapParseFailure}. */
    private static final class Refusal extends JwtException {
        final GrantFailure failure;
        final String detail;

        Refusal(GrantFailure failure, String detail) {
            super(failure.code());
            this.failure = failure;
            this.detail = detail;
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this; // control flow, not a bug
        }
    }

    private static String requiredString(Claims claims, String name) throws GrantException {
        Object v = claims.get(name);
        if (!(v instanceof String s) || s.isBlank()) {
            throw new GrantException(GrantFailure.MALFORMED, "missing or invalid " + name + " claim");
        }
        return s;
    }

    private static String optionalString(Claims claims, String name) throws GrantException {
        Object v = claims.get(name);
        if (v == null) return null;
        if (!(v instanceof String s)) {
            throw new GrantException(GrantFailure.MALFORMED, "invalid " + name + " claim");
        }
        return s;
    }

    private static int requiredPort(Claims claims) throws GrantException {
        Object v = claims.get(GrantClaims.PORT);
        long port = (v instanceof Integer || v instanceof Long || v instanceof Short) ? ((Number) v).longValue() : -1;
        if (port < 1 || port > 65535) {
            throw new GrantException(GrantFailure.MALFORMED, "missing or invalid port claim");
        }
        return (int) port;
    }

    private static Instant instant(Claims claims, String name) throws GrantException {
        try {
            Date d = switch (name) {
                case "exp" -> claims.getExpiration();
                case "iat" -> claims.getIssuedAt();
                default -> claims.getNotBefore();
            };
            return d == null ? null : d.toInstant();
        } catch (RuntimeException e) {
            throw new GrantException(GrantFailure.MALFORMED, "invalid " + name + " claim");
        }
    }

    /** Attacker-supplied header values go into messages only as short, inert text. */
    private static String safe(String s) {
        if (s == null) return "(none)";
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < s.length() && sb.length() < 32; i++) {
            char c = s.charAt(i);
            sb.append(Character.isLetterOrDigit(c) && c < 128 || c == '-' || c == '_' || c == '.' ? c : '?');
        }
        return s.length() > 32 ? sb + "..." : sb.toString();
    }
}
