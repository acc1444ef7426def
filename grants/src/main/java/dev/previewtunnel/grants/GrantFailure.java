package dev.previewtunnel.grants;

import java.util.Locale;

/** Why a grant or connection token was refused. {@link #code()} is the stable wire/log identifier. */
public enum GrantFailure {
    MISSING,
    MALFORMED,
    BAD_ALGORITHM,
    UNKNOWN_KEY,
    BAD_SIGNATURE,
    WRONG_AUDIENCE,
    EXPIRED,
    NOT_YET_VALID,
    LIFETIME_TOO_LONG,
    WRONG_ENVIRONMENT,
    WRONG_TARGET,
    REVOKED;

    private final String code = "grant_" + name().toLowerCase(Locale.ROOT);
    private final String tokenCode = "token_" + name().toLowerCase(Locale.ROOT);

    /** e.g. {@code grant_expired}, {@code grant_bad_signature}. */
    public String code() {
        return code;
    }

    /**
     * The same failure of a connection token, e.g. {@code token_expired}: the gateway's audit lines and metric
     * labels. The upgrade's refusal message keeps {@link #code()}: desktop-ingress doctor reads it from there.
     */
    public String tokenCode() {
        return tokenCode;
    }
}
