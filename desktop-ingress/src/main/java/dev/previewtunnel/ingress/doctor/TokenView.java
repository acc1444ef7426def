package dev.previewtunnel.ingress.doctor;

import com.fasterxml.jackson.databind.JsonNode;

import dev.previewtunnel.json.JsonTrees;
import java.io.IOException;
import java.time.Instant;
import java.util.Base64;

/** What a connection token claims (unverified; for advice only): environment, expiry, key id. */
record TokenView(String env, Instant exp, String kid) {

    /** The claims, or null when {@code jwt} is not a readable JWT. */
    static TokenView peek(String jwt) {
        try {
            String[] parts = jwt.split("\\.");
            if (parts.length != 3) {
                return null;
            }
            JsonNode header = JsonTrees.parse(Base64.getUrlDecoder().decode(parts[0]));
            JsonNode payload = JsonTrees.parse(Base64.getUrlDecoder().decode(parts[1]));
            return new TokenView(payload.path("env").asText(null),
                    payload.has("exp") ? Instant.ofEpochSecond(payload.get("exp").asLong()) : null,
                    header.path("kid").asText(null));
        } catch (IOException | RuntimeException e) {
            return null; // never the exception: its message could quote the token
        }
    }
}
