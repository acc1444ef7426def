package dev.previewtunnel.grants;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.jsonwebtoken.Jwts;
import io.jsonwebtoken.security.Jwks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KeyDirectoryTest {
    private static final String ENV = "env-1";
    private static final Instant T0 = Instant.parse("2030-01-01T00:00:00Z");

    @TempDir
    Path tmp;

    private final MutableClock clock = new MutableClock(T0);

    @Test
    void initCreatesOwnerOnlyFilesAndAWorkingKeyPair() throws Exception {
        Path dir = tmp.resolve("keys");
        KeyDirectory kd = KeyDirectory.init(dir);
        assertTrue(kd.signingKey().kid().matches("k-[0-9a-f]{12}"), kd.signingKey().kid());
        assertEquals(Set.of(kd.signingKey().kid()), kd.verificationKeys().kids());
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(Set.of(KeyDirectory.SIGNING_KEY_FILE, KeyDirectory.VERIFY_KEYS_FILE),
                    Set.copyOf(files.map(p -> p.getFileName().toString()).toList()), "no temp files left behind");
        }
        if (KeyFiles.isPosix(dir)) {
            assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
            assertEquals("rw-------", perms(dir.resolve(KeyDirectory.SIGNING_KEY_FILE)));
            assertEquals("rw-------", perms(dir.resolve(KeyDirectory.VERIFY_KEYS_FILE)));
        }
        String grant = new GrantIssuer(kd.signingKey(), clock).issueGrant(GrantSpec.tcp(ENV, "s", "localhost", 3000),
                Duration.ofMinutes(1));
        VerifiedGrant g = new GrantVerifier(KeyDirectory.open(dir).verificationKeys(), clock, VerifierPolicy.defaults())
                .verifyGrant(grant, ENV, "localhost:3000");
        assertEquals(kd.signingKey().kid(), g.kid());
    }

    @Test
    void keyFilesAreJwksReadableByJjwt() throws Exception {
        Path dir = tmp.resolve("keys");
        KeyDirectory kd = KeyDirectory.init(dir);
        var jwk = Jwks.parser().build().parse(Files.readString(dir.resolve(KeyDirectory.SIGNING_KEY_FILE)));
        assertEquals("OKP", jwk.getType());
        assertEquals(kd.signingKey().kid(), jwk.getId());
        var set = Jwks.setParser().build().parse(Files.readString(dir.resolve(KeyDirectory.VERIFY_KEYS_FILE)));
        assertEquals(1, set.getKeys().size());
        assertFalse(Files.readString(dir.resolve(KeyDirectory.VERIFY_KEYS_FILE)).contains("\"d\""),
                "no private parameter in the public set");
    }

    @Test
    void initRefusesToOverwriteExistingKeys() throws Exception {
        Path dir = tmp.resolve("keys");
        KeyDirectory.init(dir);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> KeyDirectory.init(dir));
        assertTrue(e.getMessage().contains(dir.resolve(KeyDirectory.SIGNING_KEY_FILE).toString()), e.getMessage());
        assertTrue(e.getMessage().contains("rotate"), e.getMessage());
    }

    @Test
    void rotateKeepsOldPublicKeysSoOldGrantsStillVerify() throws Exception {
        Path dir = tmp.resolve("keys");
        KeyDirectory first = KeyDirectory.init(dir);
        String oldGrant = new GrantIssuer(first.signingKey(), clock)
                .issueGrant(GrantSpec.tcp(ENV, "s", "localhost", 3000), Duration.ofMinutes(5));

        KeyDirectory second = KeyDirectory.rotate(dir);
        String oldKid = first.signingKey().kid();
        String newKid = second.signingKey().kid();
        assertNotEquals(oldKid, newKid);
        assertEquals(Set.of(oldKid, newKid), KeyDirectory.open(dir).verificationKeys().kids());
        assertEquals(newKid, KeyDirectory.open(dir).signingKey().kid());
        if (KeyFiles.isPosix(dir)) {
            assertEquals("rw-------", perms(dir.resolve(KeyDirectory.SIGNING_KEY_FILE)));
            assertEquals("rw-------", perms(dir.resolve(KeyDirectory.VERIFY_KEYS_FILE)));
        }

        GrantVerifier verifier = new GrantVerifier(second.verificationKeys(), clock, VerifierPolicy.defaults());
        assertEquals(oldKid, verifier.verifyGrant(oldGrant, ENV, "localhost:3000").kid());
        String newGrant = new GrantIssuer(second.signingKey(), clock)
                .issueGrant(GrantSpec.tcp(ENV, "s", "localhost", 3000), Duration.ofMinutes(5));
        assertEquals(newKid, verifier.verifyGrant(newGrant, ENV, "localhost:3000").kid());
        assertEquals(3, KeyDirectory.rotate(dir).verificationKeys().kids().size());
    }

    @Test
    void rotateNeedsAnInitialisedDirectory() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> KeyDirectory.rotate(tmp.resolve("none")));
        assertTrue(e.getMessage().contains(KeyDirectory.VERIFY_KEYS_FILE), e.getMessage());
    }

    @Test
    void reloadingKeysPickUpARotationAfterTheCheckInterval() throws Exception {
        Path dir = tmp.resolve("keys");
        KeyDirectory first = KeyDirectory.init(dir);
        ReloadingVerificationKeys reloading = first.reloadingVerificationKeys(clock);
        GrantVerifier verifier = new GrantVerifier(reloading, clock, VerifierPolicy.defaults());

        KeyDirectory second = KeyDirectory.rotate(dir);
        String newGrant = new GrantIssuer(second.signingKey(), clock)
                .issueGrant(GrantSpec.tcp(ENV, "s", "localhost", 3000), Duration.ofMinutes(5));
        // Within the interval the file is not even looked at.
        GrantException e = assertThrows(GrantException.class, () -> verifier.verifyGrant(newGrant, ENV, "localhost:3000"));
        assertEquals(GrantFailure.UNKNOWN_KEY, e.failure());

        clock.advance(Duration.ofMillis(ReloadingVerificationKeys.CHECK_INTERVAL_MILLIS));
        assertEquals(second.signingKey().kid(), verifier.verifyGrant(newGrant, ENV, "localhost:3000").kid());
        assertEquals(Set.of(first.signingKey().kid(), second.signingKey().kid()), reloading.kids());
        assertTrue(reloading.lastReloadProblem().isEmpty());
    }

    @Test
    void reloadingKeepsTheLastGoodKeysWhenTheFileBreaks() throws Exception {
        Path dir = tmp.resolve("keys");
        KeyDirectory kd = KeyDirectory.init(dir);
        ReloadingVerificationKeys reloading = kd.reloadingVerificationKeys(clock);
        Files.writeString(dir.resolve(KeyDirectory.VERIFY_KEYS_FILE), "{ not json");
        clock.advance(Duration.ofSeconds(2));
        assertTrue(reloading.find(kd.signingKey().kid()).isPresent());
        assertTrue(reloading.lastReloadProblem().isPresent());
    }

    @Test
    void openRefusesAGroupReadableSigningKey() throws Exception {
        Path dir = tmp.resolve("keys");
        KeyDirectory.init(dir);
        assertTrue(KeyFiles.isPosix(dir), "key files are protected with POSIX permissions");
        Path signing = dir.resolve(KeyDirectory.SIGNING_KEY_FILE);
        Files.setPosixFilePermissions(signing, PosixFilePermissions.fromString("rw-r--r--"));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> KeyDirectory.open(dir));
        assertTrue(e.getMessage().contains("has permissions rw-r--r--"), e.getMessage());
        assertTrue(e.getMessage().contains("run chmod 600 " + signing), e.getMessage());

        Files.setPosixFilePermissions(signing, PosixFilePermissions.fromString("rw-------"));
        KeyDirectory.open(dir);
    }

    @Test
    void secretsNeverAppearInToStringOrMessages() throws Exception {
        Path dir = tmp.resolve("keys");
        KeyDirectory kd = KeyDirectory.init(dir);
        PrivateKey privateKey = kd.signingKey().privateKey();
        String privateJwk = Files.readString(dir.resolve(KeyDirectory.SIGNING_KEY_FILE));
        String d = new ObjectMapper().readTree(privateJwk).get("d").asText();
        String encoded = Base64.getEncoder().encodeToString(privateKey.getEncoded());
        for (String s : List.of(kd.signingKey().toString(), kd.toString(), kd.verificationKeys().toString())) {
            assertFalse(s.contains(d), s);
            assertFalse(s.contains(encoded), s);
        }
        assertTrue(kd.signingKey().toString().contains(kd.signingKey().kid()));

        // A corrupted signing key file is reported without quoting it.
        Path signing = dir.resolve(KeyDirectory.SIGNING_KEY_FILE);
        Files.writeString(signing, privateJwk.replace("\"kty\"", "\"kty_\""));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> KeyDirectory.open(dir));
        assertFalse(e.getMessage().contains(d), e.getMessage());
        assertTrue(e.getMessage().contains(signing.toString()), e.getMessage());
    }

    @Test
    void verificationKeysRefuseNonEd25519KeysNamingTheKid() throws Exception {
        KeyPair rsa = Jwts.SIG.RS256.keyPair().build();
        Path file = jwksWith(Jwks.json(Jwks.builder().key(rsa.getPublic()).id("k-rsa").build()));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> VerificationKeys.load(file));
        assertTrue(e.getMessage().contains("k-rsa"), e.getMessage());

        KeyPair ed448 = Jwks.CRV.Ed448.keyPair().build();
        Path file448 = jwksWith(Jwks.json(Jwks.builder().key(ed448.getPublic()).id("k-448").build()));
        e = assertThrows(IllegalStateException.class, () -> VerificationKeys.load(file448));
        assertTrue(e.getMessage().contains("k-448"), e.getMessage());
    }

    @Test
    void verificationKeysRefusePrivateKeyMaterial() throws Exception {
        KeyPair ed = Jwks.CRV.Ed25519.keyPair().build();
        String privateJwk = Jwks.UNSAFE_JSON(Jwks.builder().<PrivateKey, PublicKey>octetKeyPair(ed).id("k-priv").build());
        Path file = jwksWith(privateJwk);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> VerificationKeys.load(file));
        assertTrue(e.getMessage().contains("k-priv"), e.getMessage());
        assertTrue(e.getMessage().contains("private"), e.getMessage());
    }

    @Test
    void verificationKeysRefuseKeysWithoutKid() throws Exception {
        KeyPair ed = Jwks.CRV.Ed25519.keyPair().build();
        Path file = jwksWith(Jwks.json(Jwks.builder().key(ed.getPublic()).build()));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> VerificationKeys.load(file));
        assertTrue(e.getMessage().contains("without a kid"), e.getMessage());
    }

    private Path jwksWith(String jwkJson) throws IOException {
        ObjectMapper json = new ObjectMapper();
        ObjectNode root = json.createObjectNode();
        ArrayNode keys = root.putArray("keys");
        keys.add(json.readTree(jwkJson));
        Path file = Files.createTempFile(tmp, "jwks", ".json");
        Files.writeString(file, json.writeValueAsString(root), StandardCharsets.UTF_8);
        return file;
    }

    private static String perms(Path p) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
    }
}
