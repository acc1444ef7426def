package dev.previewtunnel.grants;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.json.JsonTrees;
import io.jsonwebtoken.security.Jwk;
import io.jsonwebtoken.security.Jwks;
import io.jsonwebtoken.security.OctetPrivateJwk;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.time.Clock;
import java.util.HexFormat;
import java.util.Set;

/**
 * A directory holding the grant signing key and the public keys grants are verified with:
 * <ul>
 *   <li>{@value #SIGNING_KEY_FILE}: the current Ed25519 private JWK (owner-only);</li>
 *   <li>{@value #VERIFY_KEYS_FILE}: a JWK Set of every public key still trusted, current and previous,
 *       so grants signed before a rotation keep verifying until they expire. Old keys are never removed
 *       automatically; delete an entry by hand to stop trusting it.</li>
 * </ul>
 * Both files are written owner-only and atomically (see {@link KeyFiles}).
 */
public final class KeyDirectory {
    public static final String SIGNING_KEY_FILE = "signing-key.jwk.json";
    public static final String VERIFY_KEYS_FILE = "verify-keys.jwks.json";

    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path dir;
    private final SigningKey signingKey;
    private final VerificationKeys verificationKeys;

    private KeyDirectory(Path dir, SigningKey signingKey, VerificationKeys verificationKeys) {
        this.dir = dir;
        this.signingKey = signingKey;
        this.verificationKeys = verificationKeys;
    }

    /**
     * Creates {@code dir} (rwx------) with a fresh key pair.
     *
     * @throws IllegalStateException if the directory already holds keys; use {@link #rotate(Path)}
     */
    public static KeyDirectory init(Path dir) throws IOException {
        Path signing = dir.resolve(SIGNING_KEY_FILE);
        Path verify = dir.resolve(VERIFY_KEYS_FILE);
        if (Files.exists(signing)) {
            throw new IllegalStateException("signing key already exists at " + signing
                    + "; refusing to overwrite it (use rotate to replace it)");
        }
        if (Files.exists(verify)) {
            // Overwriting would silently drop trusted public keys.
            throw new IllegalStateException("verify keys already exist at " + verify
                    + "; refusing to overwrite them (use rotate to add a new key)");
        }
        KeyFiles.createPrivateDirectory(dir);
        OctetPrivateJwk<PrivateKey, PublicKey> jwk = newSigningJwk(Set.of());
        KeyFiles.writeOwnerOnlyAtomically(verify, publicKeySet(JsonTrees.array(), jwk));
        KeyFiles.writeOwnerOnlyAtomically(signing, Jwks.UNSAFE_JSON(jwk).getBytes(StandardCharsets.UTF_8));
        return open(dir);
    }

    /**
     * Makes a new key pair the signing key and adds its public key to the verify set, keeping the old
     * public keys so grants already issued still verify.
     *
     * @throws IllegalStateException if {@code dir} has no verify keys (run init first) or they are invalid
     */
    public static KeyDirectory rotate(Path dir) throws IOException {
        Path verify = dir.resolve(VERIFY_KEYS_FILE);
        if (!Files.exists(verify)) {
            throw new IllegalStateException("no verify keys at " + verify + "; initialise the key directory first");
        }
        // Validate before extending: appending to a file we cannot read would propagate the damage.
        VerificationKeys existing = VerificationKeys.load(verify);
        JsonNode root = JsonTrees.parse(Files.readString(verify, StandardCharsets.UTF_8));
        ArrayNode keys = ((ArrayNode) root.get("keys")).deepCopy();

        OctetPrivateJwk<PrivateKey, PublicKey> jwk = newSigningJwk(existing.kids());
        // Public key first: if we stop between the two writes, verifiers already trust the new key
        // while the old one still signs, which is harmless. The reverse order would mint grants
        // nobody can verify.
        KeyFiles.writeOwnerOnlyAtomically(verify, publicKeySet(keys, jwk));
        KeyFiles.writeOwnerOnlyAtomically(dir.resolve(SIGNING_KEY_FILE),
                Jwks.UNSAFE_JSON(jwk).getBytes(StandardCharsets.UTF_8));
        return open(dir);
    }

    /**
     * Loads both files.
     *
     * @throws IllegalStateException if the signing key is group/other-accessible, is not an Ed25519
     *                               private JWK with a kid, or its kid is not among the verify keys
     */
    public static KeyDirectory open(Path dir) throws IOException {
        Path signing = dir.resolve(SIGNING_KEY_FILE);
        KeyFiles.requireOwnerOnly(signing);
        SigningKey key = readSigningKey(signing);
        VerificationKeys keys = VerificationKeys.load(dir.resolve(VERIFY_KEYS_FILE));
        if (keys.find(key.kid()).isEmpty()) {
            throw new IllegalStateException("signing key kid " + key.kid() + " is missing from "
                    + dir.resolve(VERIFY_KEYS_FILE) + "; grants it signs would not verify");
        }
        return new KeyDirectory(dir, key, keys);
    }

    public Path dir() {
        return dir;
    }

    public Path verifyKeysFile() {
        return dir.resolve(VERIFY_KEYS_FILE);
    }

    public SigningKey signingKey() {
        return signingKey;
    }

    /** A snapshot of the verify keys as loaded. */
    public VerificationKeys verificationKeys() {
        return verificationKeys;
    }

    /** Verify keys that follow later rotations of this directory's JWKS file. */
    public ReloadingVerificationKeys reloadingVerificationKeys(Clock clock) throws IOException {
        return new ReloadingVerificationKeys(verifyKeysFile(), clock);
    }

    @Override
    public String toString() {
        return "KeyDirectory[" + dir + ", signing kid=" + signingKey.kid() + "]";
    }

    private static SigningKey readSigningKey(Path file) throws IOException {
        String json = Files.readString(file, StandardCharsets.UTF_8);
        Jwk<?> jwk;
        try {
            jwk = Jwks.parser().build().parse(json);
        } catch (RuntimeException e) {
            // No cause and no parser message: they could quote the private key's parameters.
            throw new IllegalStateException("signing key " + file + " is not a valid JWK");
        }
        if (!(jwk instanceof OctetPrivateJwk<?, ?>) || !"Ed25519".equals(String.valueOf(jwk.get("crv")))) {
            throw new IllegalStateException("signing key " + file + " is not an Ed25519 (OKP) private JWK");
        }
        String kid = jwk.getId();
        if (kid == null || kid.isBlank()) {
            throw new IllegalStateException("signing key " + file + " has no kid");
        }
        return new SigningKey(kid, (PrivateKey) jwk.toKey());
    }

    private static OctetPrivateJwk<PrivateKey, PublicKey> newSigningJwk(Set<String> takenKids) {
        // Not Jwts.SIG.EdDSA.keyPair(): that may pick Ed448; the format is pinned to Ed25519.
        KeyPair pair = Jwks.CRV.Ed25519.keyPair().build();
        String kid;
        do {
            kid = newKid();
        } while (takenKids.contains(kid));
        return Jwks.builder().<PrivateKey, PublicKey>octetKeyPair(pair)
                .id(kid)
                .algorithm("EdDSA")
                .publicKeyUse("sig")
                .build();
    }

    /** "k-" + 12 hex chars (48 random bits): unique enough for a handful of rotations, short to read in logs. */
    private static String newKid() {
        byte[] b = new byte[6];
        RANDOM.nextBytes(b);
        return "k-" + HexFormat.of().formatHex(b);
    }

    /** {"keys":[...existing..., new public JWK]} built from JJWT's public JWK JSON. */
    private static byte[] publicKeySet(ArrayNode existingKeys, OctetPrivateJwk<PrivateKey, PublicKey> jwk)
            throws IOException {
        ObjectNode root = JsonTrees.object();
        ArrayNode keys = root.putArray("keys");
        keys.addAll(existingKeys);
        keys.add(JsonTrees.parse(Jwks.json(jwk.toPublicJwk())));
        return JsonTrees.writePretty(root).getBytes(StandardCharsets.UTF_8);
    }
}
