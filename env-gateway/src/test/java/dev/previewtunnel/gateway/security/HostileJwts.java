package dev.previewtunnel.gateway.security;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PublicKey;
import java.security.Signature;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.UUID;

/**
 * Hand-built JWTs an attacker could send: the claim set the real issuer writes, but with an algorithm, header
 * or signature of the attacker's choosing. Built with the JDK only (no JJWT), so nothing here can be "helpfully"
 * refused by the library before it reaches the gateway.
 */
final class HostileJwts {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

    private HostileJwts() {
    }

    static String b64(String text) {
        return B64.encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    static String b64(byte[] bytes) {
        return B64.encodeToString(bytes);
    }

    static String decode(String segment) {
        return new String(Base64.getUrlDecoder().decode(segment), StandardCharsets.UTF_8);
    }

    static String header(String alg, String typ, String kid) {
        ObjectNode h = JSON.createObjectNode().put("alg", alg).put("typ", typ);
        if (kid != null) {
            h.put("kid", kid);
        }
        return h.toString();
    }

    /** The claims {@code GrantIssuer} writes for a grant, valid from now for five minutes. */
    static String grantClaims(String env, String session, String host, int port) {
        Instant now = Instant.now();
        return JSON.createObjectNode()
                .put("iss", "ptun")
                .put("aud", "ptun-grant")
                .put("iat", now.getEpochSecond())
                .put("nbf", now.getEpochSecond())
                .put("exp", now.plus(Duration.ofMinutes(5)).getEpochSecond())
                .put("jti", UUID.randomUUID().toString())
                .put("env", env)
                .put("sid", session)
                .put("host", host)
                .put("port", port)
                .put("proto", "tcp")
                .toString();
    }

    /** The claims of a connection token for {@code env}, valid from now for one hour. */
    static String tokenClaims(String env) {
        Instant now = Instant.now();
        return JSON.createObjectNode()
                .put("iss", "ptun")
                .put("aud", "ptun-connect")
                .put("iat", now.getEpochSecond())
                .put("nbf", now.getEpochSecond())
                .put("exp", now.plus(Duration.ofHours(1)).getEpochSecond())
                .put("jti", UUID.randomUUID().toString())
                .put("env", env)
                .toString();
    }

    /** {@code alg:none}: header and payload, empty signature. */
    static String unsigned(String typ, String kid, String claims) {
        return b64(header("none", typ, kid)) + "." + b64(claims) + ".";
    }

    /** HS256 keyed with {@code key}'s encoded bytes: the classic public-key-as-HMAC-secret confusion. */
    static String hs256WithPublicKey(String typ, String kid, String claims, PublicKey key) {
        String signingInput = b64(header("HS256", typ, kid)) + "." + b64(claims);
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key.getEncoded(), "HmacSHA256"));
            return signingInput + "." + b64(mac.doFinal(signingInput.getBytes(StandardCharsets.US_ASCII)));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** RS256 signed with a fresh RSA key of the attacker's. */
    static String rs256(String typ, String kid, String claims) {
        String signingInput = b64(header("RS256", typ, kid)) + "." + b64(claims);
        try {
            KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
            g.initialize(2048);
            KeyPair pair = g.generateKeyPair();
            Signature s = Signature.getInstance("SHA256withRSA");
            s.initSign(pair.getPrivate());
            s.update(signingInput.getBytes(StandardCharsets.US_ASCII));
            return signingInput + "." + b64(s.sign());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Replaces the payload of a signed JWT, keeping header and signature (the signature no longer matches). */
    static String withPayload(String jwt, String claims) {
        String[] parts = jwt.split("\\.", -1);
        return parts[0] + "." + b64(claims) + "." + parts[2];
    }

    static String payloadOf(String jwt) {
        return decode(jwt.split("\\.", -1)[1]);
    }
}
