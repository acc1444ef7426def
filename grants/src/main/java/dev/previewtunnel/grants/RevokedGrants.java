package dev.previewtunnel.grants;

/**
 * Lets the gateway refuse individual grants before they expire (by {@code jti}).
 * Checked last, after the signature, so an attacker cannot probe the list with forged tokens.
 */
@FunctionalInterface
public interface RevokedGrants {
    RevokedGrants NONE = jti -> false;

    boolean isRevoked(String jti);
}
