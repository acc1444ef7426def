package dev.previewtunnel.gateway;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Bounds the CPU that failing connection tokens can cost, before any token verified. Nothing identifies a client
 * then (behind ssh -L or nginx every peer is 127.0.0.1), so the budget is gateway-wide: {@code perSecond} failed
 * token verifications, beyond which upgrades with an unknown token are refused unverified until it refills.
 * Honest ingresses reconnect with a token that verified before: its SHA-256 is remembered (a bounded LRU, until
 * the token expires) and such a token is always verified, so a flood of bad tokens cannot lock them out; only
 * first connections of new tokens wait for the flood to stop. Thread-safe.
 */
final class HandshakeFailureGuard {
    /** Tokens remembered as verified; beyond it the least recently used is forgotten. */
    static final int KNOWN_TOKENS = 1024;

    private final FailureBudget budget;
    private final Map<Key, Instant> known = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Key, Instant> eldest) {
            return size() > KNOWN_TOKENS;
        }
    };

    HandshakeFailureGuard(int failuresPerSecond) {
        this.budget = new FailureBudget(failuresPerSecond, 0, System.nanoTime());
    }

    /** A digest of a token, so the guard holds no token text. */
    record Key(byte[] sha256) {
        static Key of(String token) {
            try {
                return new Key(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("SHA-256 is always available", e);
            }
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && Arrays.equals(sha256, k.sha256);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(sha256);
        }

        @Override
        public String toString() {
            return "Key[sha256]";
        }
    }

    /**
     * True when the token may be verified now: it verified before, or a unit of the failure budget was reserved
     * for it. A true is followed by {@link #verified} or {@link #failed}.
     */
    synchronized boolean mayVerify(Key token, Instant now) {
        Instant expires = known.get(token);
        if (expires != null) {
            if (now.isBefore(expires)) {
                return true;
            }
            known.remove(token);
        }
        return budget.tryReserve(System.nanoTime());
    }

    /**
     * The token verified: remembered until it expires; the unit reserved for it (only a token not known yet
     * reserved one) is given back.
     */
    synchronized void verified(Key token, Instant expiresAt) {
        if (known.put(token, expiresAt) == null) {
            budget.succeeded();
        }
    }

    synchronized void failed() {
        budget.failed(System.nanoTime());
    }
}
