package dev.previewtunnel.grants;

import java.security.PublicKey;
import java.util.Optional;

/** Where the verifier finds the public key for a JWS {@code kid}. */
@FunctionalInterface
public interface VerificationKeysSource {
    Optional<PublicKey> find(String kid);
}
