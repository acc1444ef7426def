package dev.previewtunnel.grants;

import io.jsonwebtoken.security.Jwk;
import io.jsonwebtoken.security.JwkSet;
import io.jsonwebtoken.security.Jwks;
import io.jsonwebtoken.security.OctetPublicJwk;
import io.jsonwebtoken.security.PrivateJwk;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PublicKey;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** An immutable kid -> Ed25519 public key map, usually loaded from {@code verify-keys.jwks.json}. */
public final class VerificationKeys implements VerificationKeysSource {
    private final Map<String, PublicKey> keys;

    public VerificationKeys(Map<String, PublicKey> keys) {
        this.keys = Map.copyOf(keys);
    }

    /**
     * Loads a JWK Set. Only Ed25519 (OKP) public keys are accepted; anything else (RSA, EC, other
     * curves, private key material, keys without a kid) is an error naming the kid, because a key we
     * silently skipped or misused would be a confusing way to lose or weaken verification.
     *
     * @throws IllegalStateException if the file content is not acceptable
     */
    public static VerificationKeys load(Path jwksFile) throws IOException {
        String json = Files.readString(jwksFile, StandardCharsets.UTF_8);
        JwkSet set;
        try {
            // ignoreUnsupported(false): an unknown key type is an error, not a silently dropped key.
            set = Jwks.setParser().ignoreUnsupported(false).build().parse(json);
        } catch (RuntimeException e) {
            throw new IllegalStateException("verify keys file " + jwksFile + " is not a valid JWK Set ("
                    + e.getClass().getSimpleName() + ")");
        }
        Map<String, PublicKey> keys = new LinkedHashMap<>();
        for (Jwk<?> jwk : set.getKeys()) {
            String kid = jwk.getId();
            if (kid == null || kid.isBlank()) {
                throw new IllegalStateException("verify keys file " + jwksFile + " contains a key without a kid");
            }
            if (jwk instanceof PrivateJwk) {
                throw new IllegalStateException("verify keys file " + jwksFile + " contains private key material for kid "
                        + kid + "; it must hold public keys only");
            }
            if (!(jwk instanceof OctetPublicJwk<?>) || !"Ed25519".equals(String.valueOf(jwk.get("crv")))) {
                throw new IllegalStateException("verify keys file " + jwksFile + ": key with kid " + kid + " is "
                        + jwk.getType() + (jwk.get("crv") != null ? "/" + jwk.get("crv") : "")
                        + "; only Ed25519 (OKP) public keys are accepted");
            }
            if (keys.put(kid, (PublicKey) jwk.toKey()) != null) {
                throw new IllegalStateException("verify keys file " + jwksFile + " contains kid " + kid + " twice");
            }
        }
        if (keys.isEmpty()) {
            throw new IllegalStateException("verify keys file " + jwksFile + " contains no keys");
        }
        return new VerificationKeys(keys);
    }

    @Override
    public Optional<PublicKey> find(String kid) {
        return kid == null ? Optional.empty() : Optional.ofNullable(keys.get(kid));
    }

    public Set<String> kids() {
        return keys.keySet();
    }

    @Override
    public String toString() {
        return "VerificationKeys" + keys.keySet();
    }
}
