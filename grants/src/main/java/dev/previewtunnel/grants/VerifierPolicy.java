package dev.previewtunnel.grants;

import java.time.Duration;
import java.util.Objects;

/**
 * Verification limits.
 *
 * @param clockSkew         tolerated clock difference between issuer and verifier for exp/nbf/iat
 * @param maxGrantLifetime  grants whose exp - max(iat, nbf) exceeds this (or whose nbf lies more than this after
 *                          iat) are refused even if validly signed, so a mis-issued long-lived grant cannot linger
 * @param maxTokenLifetime  same cap for connection tokens
 * @param maxTokenLength    tokens longer than this are refused before any parsing (cheap DoS guard)
 */
public record VerifierPolicy(Duration clockSkew, Duration maxGrantLifetime, Duration maxTokenLifetime,
                             int maxTokenLength) {

    public static final int DEFAULT_MAX_TOKEN_LENGTH = 8192;

    public VerifierPolicy {
        Objects.requireNonNull(clockSkew, "clockSkew");
        Objects.requireNonNull(maxGrantLifetime, "maxGrantLifetime");
        Objects.requireNonNull(maxTokenLifetime, "maxTokenLifetime");
        if (clockSkew.isNegative()) throw new IllegalArgumentException("clockSkew must not be negative");
        if (maxGrantLifetime.isNegative() || maxGrantLifetime.isZero()) {
            throw new IllegalArgumentException("maxGrantLifetime must be positive");
        }
        if (maxTokenLifetime.isNegative() || maxTokenLifetime.isZero()) {
            throw new IllegalArgumentException("maxTokenLifetime must be positive");
        }
        if (maxTokenLength < 64) throw new IllegalArgumentException("maxTokenLength must be >= 64");
    }

    /** 30s skew, 15 min grants, 24h connection tokens, 8192-char tokens. */
    public static VerifierPolicy defaults() {
        return new VerifierPolicy(Duration.ofSeconds(30), Duration.ofMinutes(15), Duration.ofHours(24),
                DEFAULT_MAX_TOKEN_LENGTH);
    }
}
