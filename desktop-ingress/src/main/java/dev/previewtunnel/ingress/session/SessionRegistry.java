package dev.previewtunnel.ingress.session;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Collection;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/** The live browser sessions, found by the {@code Proxy-Authorization} credential a connection presents. */
public final class SessionRegistry {
    private final ConcurrentHashMap<String, BrowserSession> byUsername = new ConcurrentHashMap<>();

    public BrowserSession add(BrowserSession session) {
        byUsername.put(session.username(), session);
        return session;
    }

    public Optional<BrowserSession> remove(String id) {
        for (BrowserSession s : byUsername.values()) {
            if (s.id().equals(id)) {
                byUsername.remove(s.username());
                return Optional.of(s);
            }
        }
        return Optional.empty();
    }

    public Optional<BrowserSession> find(String id) {
        for (BrowserSession s : byUsername.values()) {
            if (s.id().equals(id)) {
                return Optional.of(s);
            }
        }
        return Optional.empty();
    }

    public Collection<BrowserSession> all() {
        return byUsername.values();
    }

    /**
     * Resolves a {@code Proxy-Authorization: Basic ...} header value to its session, or empty for a missing,
     * malformed or wrong credential (the caller answers 407 in every case and says nothing more).
     */
    public Optional<BrowserSession> authenticate(String proxyAuthorization) {
        if (proxyAuthorization == null || !proxyAuthorization.regionMatches(true, 0, "Basic ", 0, 6)) {
            return Optional.empty();
        }
        byte[] decoded;
        try {
            decoded = Base64.getDecoder().decode(proxyAuthorization.substring(6).trim());
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        String pair = new String(decoded, StandardCharsets.UTF_8);
        int colon = pair.indexOf(':');
        if (colon < 0) {
            return Optional.empty();
        }
        BrowserSession session = byUsername.get(pair.substring(0, colon));
        if (session == null) {
            return Optional.empty();
        }
        byte[] candidate = pair.substring(colon + 1).getBytes(StandardCharsets.UTF_8);
        return session.passwordMatches(candidate) ? Optional.of(session) : Optional.empty();
    }
}
