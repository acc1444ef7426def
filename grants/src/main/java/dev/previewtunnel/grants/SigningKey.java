package dev.previewtunnel.grants;

import java.security.PrivateKey;
import java.util.Objects;

/** The Ed25519 private key grants are signed with, and the {@code kid} verifiers look it up by. */
public record SigningKey(String kid, PrivateKey privateKey) {

    public SigningKey {
        Objects.requireNonNull(kid, "kid");
        Objects.requireNonNull(privateKey, "privateKey");
    }

    /** Never prints key material: records would otherwise include the key's own toString. */
    @Override
    public String toString() {
        return "SigningKey[kid=" + kid + ", alg=Ed25519]";
    }
}
