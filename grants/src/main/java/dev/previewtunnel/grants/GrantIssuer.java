package dev.previewtunnel.grants;

import io.jsonwebtoken.JwtBuilder;
import io.jsonwebtoken.Jwts;
import io.jsonwebtoken.io.Encoders;

import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Date;
import java.util.Objects;

/** Signs grants and connection tokens with the directory's Ed25519 signing key. Thread-safe. */
public final class GrantIssuer {
    /** Hard cap on any ttl, whatever the caller asks for; verifiers apply their own (shorter) caps too. */
    public static final Duration MAX_TTL = Duration.ofHours(24);

    private static final SecureRandom RANDOM = new SecureRandom();

    private final SigningKey key;
    private final Clock clock;

    public GrantIssuer(SigningKey key, Clock clock) {
        this.key = Objects.requireNonNull(key, "key");
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /** A grant for {@code spec}, valid from now for {@code ttl}. */
    public String issueGrant(GrantSpec spec, Duration ttl) {
        Objects.requireNonNull(spec, "spec");
        JwtBuilder b = start(GrantClaims.TYP_GRANT, GrantClaims.AUD_GRANT, ttl)
                .claim(GrantClaims.ENV, spec.environment())
                .claim(GrantClaims.SESSION, spec.session())
                .claim(GrantClaims.HOST, spec.targetHost())
                .claim(GrantClaims.PORT, spec.targetPort())
                .claim(GrantClaims.PROTOCOL, spec.protocol());
        if (spec.provider() != null) b.claim(GrantClaims.PROVIDER, spec.provider());
        if (spec.thread() != null) b.claim(GrantClaims.THREAD, spec.thread());
        return b.compact();
    }

    /** A token that lets a desktop connect to the gateway of {@code environment}. */
    public String issueConnectionToken(String environment, Duration ttl) {
        if (environment == null || environment.isBlank()) {
            throw new IllegalArgumentException("environment must not be blank");
        }
        return start(GrantClaims.TYP_TOKEN, GrantClaims.AUD_CONNECT, ttl)
                .claim(GrantClaims.ENV, environment)
                .compact();
    }

    private JwtBuilder start(String typ, String audience, Duration ttl) {
        if (ttl == null || ttl.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException("ttl must be at least 1 second");
        }
        if (ttl.compareTo(MAX_TTL) > 0) {
            throw new IllegalArgumentException("ttl must be at most " + MAX_TTL.toHours() + "h");
        }
        // JWT times are whole seconds; truncating here keeps exp - iat exactly the (whole-second) ttl.
        Instant iat = clock.instant().truncatedTo(ChronoUnit.SECONDS);
        Instant exp = iat.plusSeconds(ttl.toSeconds());
        return Jwts.builder()
                .header().type(typ).keyId(key.kid()).and()
                .issuer(GrantClaims.ISSUER)
                .audience().add(audience).and()
                .issuedAt(Date.from(iat))
                .notBefore(Date.from(iat))
                .expiration(Date.from(exp))
                .id(newJti())
                .signWith(key.privateKey(), Jwts.SIG.EdDSA);
    }

    /** 128 random bits, base64url: unguessable and unique, so it can key a revocation list. */
    private static String newJti() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return Encoders.BASE64URL.encode(b);
    }
}
