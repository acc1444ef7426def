package dev.previewtunnel.ingress.session;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * One browser session (a Chromium profile, a Playwright context, an Electron partition): its own random proxy
 * credential and its own authority map. Only a browser configured with this credential can use the map.
 */
public final class BrowserSession {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final String id;
    private final String username;
    private final byte[] password;
    private final AuthorityMap authorities = new AuthorityMap();

    private BrowserSession(String id, String username, byte[] password) {
        this.id = id;
        this.username = username;
        this.password = password;
    }

    public static BrowserSession create(String id) {
        byte[] secret = new byte[24];
        RANDOM.nextBytes(secret);
        String password = Base64.getUrlEncoder().withoutPadding().encodeToString(secret);
        return new BrowserSession(id, "ptun-" + id, password.getBytes(StandardCharsets.UTF_8));
    }

    public String id() {
        return id;
    }

    public String username() {
        return username;
    }

    /** The secret half of the credential, for the owner-only credentials file only. */
    public String password() {
        return new String(password, StandardCharsets.UTF_8);
    }

    public AuthorityMap authorities() {
        return authorities;
    }

    /** Constant-time comparison, so the time taken says nothing about how much of a guess was right. */
    boolean passwordMatches(byte[] candidate) {
        return MessageDigest.isEqual(password, candidate);
    }

    @Override
    public String toString() {
        return "BrowserSession[" + id + "]";
    }
}
