package dev.previewtunnel.grants;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.json.JsonTrees;
import io.jsonwebtoken.io.Decoders;

import java.time.Instant;

/**
 * What a grant <em>claims</em>, read WITHOUT checking its signature, expiry or anything else.
 *
 * <p><b>FOR ROUTING AND DISPLAY ONLY. NEVER AN AUTHORISATION DECISION.</b> Anyone can write any
 * payload; the desktop side (which holds no keys) uses this only to learn which target a grant names
 * so it can forward the request. The gateway must still run {@link GrantVerifier#verifyGrant}, which
 * is the only thing that makes a grant mean anything.
 */
public record UnverifiedGrantView(String targetHost, int targetPort, String environment, String session,
                                  Instant expiresAt, String jti) {


    /**
     * @throws IllegalArgumentException "not a grant" (never echoing the input) if the payload does not
     *                                  look like a grant
     */
    public static UnverifiedGrantView decode(String jwt) {
        try {
            if (jwt == null || jwt.length() > VerifierPolicy.DEFAULT_MAX_TOKEN_LENGTH) throw notAGrant();
            String[] parts = jwt.split("\\.", -1);
            if (parts.length != 3 || parts[1].isEmpty()) throw notAGrant();
            JsonNode p = JsonTrees.parse(Decoders.BASE64URL.decode(parts[1]));
            if (p == null || !p.isObject()) throw notAGrant();
            JsonNode port = p.get(GrantClaims.PORT);
            JsonNode exp = p.get("exp");
            if (port == null || !port.canConvertToInt() || !port.isIntegralNumber()
                    || exp == null || !exp.isIntegralNumber()) {
                throw notAGrant();
            }
            int portValue = port.intValue();
            if (portValue < 1 || portValue > 65535) throw notAGrant();
            return new UnverifiedGrantView(text(p, GrantClaims.HOST), portValue, text(p, GrantClaims.ENV),
                    text(p, GrantClaims.SESSION), Instant.ofEpochSecond(exp.longValue()), text(p, "jti"));
        } catch (Exception e) {
            // Deliberately no cause: Jackson/decoder messages quote the input.
            throw notAGrant();
        }
    }

    private static String text(JsonNode payload, String name) {
        JsonNode n = payload.get(name);
        if (n == null || !n.isTextual() || n.textValue().isBlank()) throw notAGrant();
        return n.textValue();
    }

    private static IllegalArgumentException notAGrant() {
        return new IllegalArgumentException("not a grant");
    }
}
