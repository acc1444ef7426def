package dev.previewtunnel.ingress.session;

import io.netty.channel.Channel;
import io.netty.util.AttributeKey;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One browser session (a Chromium profile, a Playwright context, an Electron partition): its own random proxy
 * credential, its own authority map and egress policy, and the browser connections it currently has open
 * through the tunnel, so that closing the session or detaching a grant ends them at once.
 */
public final class BrowserSession {
    private static final SecureRandom RANDOM = new SecureRandom();
    /** Why the ingress itself closed a browser connection, for its streams' {@code stream_closed} lines. */
    public static final AttributeKey<String> CLOSE_REASON = AttributeKey.valueOf("ptun-close-reason");
    public static final String SESSION_CLOSED = "session_closed";
    public static final String GRANT_DETACHED = "grant_detached";
    public static final String SHUTDOWN = "shutdown";

    private final String id;
    private final String username;
    /** Replaced only by {@link #rotate}; stable otherwise, across ingress restarts too (see SessionStore). */
    private volatile byte[] password;
    private final AuthorityMap authorities;
    private volatile EgressPolicy egress = EgressPolicy.DENY;
    /** Set once by {@link #closeAll}; guarded by {@code this}. */
    private boolean closed;
    /** Live browser connections and the grant ids whose streams they carry. */
    private final Map<Channel, Set<String>> live = new ConcurrentHashMap<>();
    /** Streams opened for this session and not closed yet: each stream's record counts itself in and out once. */
    private final AtomicInteger liveStreams = new AtomicInteger();

    private BrowserSession(String id, String username, byte[] password, AuthorityMap authorities) {
        this.id = id;
        this.username = username;
        this.password = password;
        this.authorities = authorities;
    }

    public static BrowserSession create(String id) {
        return create(id, AuthorityMap.DEFAULT_SUFFIX);
    }

    public static BrowserSession create(String id, String virtualHostSuffix) {
        if (id == null || !id.matches("[A-Za-z0-9._-]{1,64}")) {
            throw new IllegalArgumentException("session id must be 1-64 of [A-Za-z0-9._-]");
        }
        return restore(id, virtualHostSuffix, newPassword());
    }

    /** A session with the credential an earlier run gave it (read back from its owner-only credentials file). */
    public static BrowserSession restore(String id, String virtualHostSuffix, String password) {
        if (id == null || !id.matches("[A-Za-z0-9._-]{1,64}")) {
            throw new IllegalArgumentException("session id must be 1-64 of [A-Za-z0-9._-]");
        }
        if (password == null || !password.matches("[A-Za-z0-9_-]{16,128}")) {
            throw new IllegalArgumentException("not a session password");
        }
        return new BrowserSession(id, "ptun-" + id, password.getBytes(StandardCharsets.UTF_8),
                new AuthorityMap(virtualHostSuffix));
    }

    private static String newPassword() {
        byte[] secret = new byte[24];
        RANDOM.nextBytes(secret);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(secret);
    }

    /**
     * Replaces the credential (asked for with {@code session rotate}) and closes the browser connections opened
     * with the old one, so whoever held it keeps nothing. The caller rewrites the credentials file. Returns how
     * many connections were closed.
     */
    public int rotate() {
        password = newPassword().getBytes(StandardCharsets.UTF_8);
        List<Channel> all;
        synchronized (this) {
            all = new ArrayList<>(live.keySet());
        }
        all.forEach(Channel::close);
        return all.size();
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

    public EgressPolicy egress() {
        return egress;
    }

    public BrowserSession egress(EgressPolicy policy) {
        this.egress = policy;
        return this;
    }

    /**
     * Records that {@code browser} now carries a stream opened for {@code route} (a route without a grant: direct
     * egress), unless the session was closed or the route's grant detached meanwhile: then nothing is recorded and
     * the caller must close the stream. A grant replaced meanwhile by a newer one for the same target and
     * environment (a refresh, by another request or by {@code grant add}) is no detach: the stream is recorded
     * under the newer grant, so detaching that one ends it.
     *
     * <p>The check and the record happen under the lock {@link #closeAll} and {@link #closeGrant} take, and a
     * detach removes the grant from the map before it closes connections, so a stream whose open was in flight
     * during a detach is either refused here or closed by the detach, never left running.
     */
    public synchronized boolean track(Channel browser, Route route) {
        if (closed) {
            return false;
        }
        String grantId = route.grantId();
        if (grantId != null && !authorities.hasGrant(grantId)) {
            AuthorityMap.Entry newer = authorities.current(route.target(), route.environment()).orElse(null);
            if (newer == null) {
                return false;
            }
            grantId = newer.grantId();
        }
        Set<String> grants = live.computeIfAbsent(browser, ch -> {
            ch.closeFuture().addListener(f -> live.remove(ch));
            return ConcurrentHashMap.newKeySet();
        });
        grants.add(grantId == null ? "" : grantId);
        return true;
    }

    /** Closes the session for good: no stream is tracked from now on, every browser connection is closed. */
    public int closeAll() {
        List<Channel> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(live.keySet());
        }
        all.forEach(ch -> closeFor(ch, SESSION_CLOSED));
        return all.size();
    }

    /**
     * Detaches a grant: removes it from the authority map first (no new stream can be tracked under it), then
     * closes the browser connections carrying its streams. Returns how many, or -1 when it was not attached.
     */
    public int detachGrant(String grantId) {
        if (!authorities.removeGrant(grantId)) {
            return -1;
        }
        return closeGrant(grantId);
    }

    /**
     * Closes the browser connections that carry streams of {@code grantId}; returns how many. Call it after the
     * grant was removed from {@link #authorities()} (as {@link #detachGrant} does).
     */
    public int closeGrant(String grantId) {
        List<Channel> matching = new ArrayList<>();
        synchronized (this) {
            live.forEach((ch, grants) -> {
                if (grants.contains(grantId)) {
                    matching.add(ch);
                }
            });
        }
        matching.forEach(ch -> closeFor(ch, GRANT_DETACHED));
        return matching.size();
    }

    /** Closes a browser connection, saying why first (the first reason given stays). */
    public static void closeFor(Channel browser, String reason) {
        browser.attr(CLOSE_REASON).setIfAbsent(reason);
        browser.close();
    }

    /** A stream of this session opened (counted once per stream by its record). */
    public void streamOpened() {
        liveStreams.incrementAndGet();
    }

    /** A stream of this session closed (once per opened stream). */
    public void streamClosed() {
        liveStreams.decrementAndGet();
    }

    /** Streams of this session open now: CONNECT relays, absolute-form streams, upgrades, direct sockets. */
    public int liveStreams() {
        return liveStreams.get();
    }

    /** True once {@link #closeAll} ran. */
    public synchronized boolean isClosed() {
        return closed;
    }

    public int liveConnections() {
        return live.size();
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
