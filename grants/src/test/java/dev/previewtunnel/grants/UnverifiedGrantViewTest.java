package dev.previewtunnel.grants;

import io.jsonwebtoken.io.Encoders;
import io.jsonwebtoken.security.Jwks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class UnverifiedGrantViewTest {
    private static final Instant T0 = Instant.parse("2030-01-01T00:00:00Z");
    private final KeyPair pair = Jwks.CRV.Ed25519.keyPair().build();
    private final GrantIssuer issuer = new GrantIssuer(new SigningKey("k-1", pair.getPrivate()), new MutableClock(T0));

    @Test
    void readsTheTargetWithoutKeys() {
        String jwt = issuer.issueGrant(GrantSpec.tcp("env-1", "sess", "[::1]", 5173), Duration.ofMinutes(2));
        UnverifiedGrantView v = UnverifiedGrantView.decode(jwt);
        assertEquals("::1", v.targetHost());
        assertEquals(5173, v.targetPort());
        assertEquals("env-1", v.environment());
        assertEquals("sess", v.session());
        assertEquals(T0.plusSeconds(120), v.expiresAt());
        assertEquals(22, v.jti().length());
    }

    @Test
    void aConnectionTokenIsNotAGrant() {
        String token = issuer.issueConnectionToken("env-1", Duration.ofMinutes(2));
        expectNotAGrant(token);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "x", "a.b.c", "a..c", "secret-looking.garbage.value", "e30.e30.e30"})
    void garbageIsNotAGrantAndIsNotEchoed(String input) {
        expectNotAGrant(input);
    }

    @Test
    void badPortOrTypesAreNotAGrant() {
        String payload = "{\"host\":\"localhost\",\"port\":\"80\",\"env\":\"e\",\"sid\":\"s\",\"exp\":1,\"jti\":\"j\"}";
        expectNotAGrant("e30." + b64(payload) + ".sig");
        String bigPort = payload.replace("\"80\"", "70000");
        expectNotAGrant("e30." + b64(bigPort) + ".sig");
        String ok = payload.replace("\"80\"", "80");
        assertEquals(80, UnverifiedGrantView.decode("e30." + b64(ok) + ".sig").targetPort());
    }

    @Test
    void nullIsNotAGrant() {
        expectNotAGrant(null);
    }

    private static void expectNotAGrant(String input) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> UnverifiedGrantView.decode(input));
        assertEquals("not a grant", e.getMessage());
        assertNull(e.getCause());
    }

    private static String b64(String s) {
        return Encoders.BASE64URL.encode(s.getBytes(StandardCharsets.UTF_8));
    }
}
