package dev.previewtunnel.ingress.session;

import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.mux.Authority;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * One browser session's map from the authority the browser asks for to a granted target.
 *
 * <p>Loopback passthrough: {@code localhost:P}, {@code 127.0.0.1:P} and {@code [::1]:P} all mean the
 * environment's loopback port P, when a grant names a loopback target on port P. The browser keeps the very
 * origin the dev server expects, so HMR, OAuth callbacks and cookies need no configuration, and the origin does
 * not depend on the ingress's own port.
 *
 * <p>The desktop holds no verification key: grants are read without verification only to learn their target
 * ({@link UnverifiedGrantView}); the gateway verifies every one on every stream.
 */
public final class AuthorityMap {
    private static final Set<String> LOOPBACK_NAMES = Set.of("localhost", "127.0.0.1", "::1");

    private final List<Entry> entries = new CopyOnWriteArrayList<>();

    private record Entry(String grant, UnverifiedGrantView view, Authority target) {
    }

    /** Adds a grant; throws IllegalArgumentException (without echoing it) when it is not a readable grant. */
    public Authority add(String grant) {
        UnverifiedGrantView view = UnverifiedGrantView.decode(grant);
        Authority target = new Authority(view.targetHost(), view.targetPort());
        entries.add(new Entry(grant, view, target));
        return target;
    }

    /** Removes grants by id; returns how many were removed. */
    public int removeGrant(String jti) {
        int before = entries.size();
        entries.removeIf(e -> jti.equals(e.view.jti()));
        return before - entries.size();
    }

    public Optional<Route> route(Authority requested) {
        Entry best = null;
        for (Entry e : entries) {
            if (e.target.equals(requested)) {
                best = e; // exact match wins; the newest exact grant is kept (refreshed grants append)
            }
        }
        if (best == null && isLoopback(requested.host())) {
            for (Entry e : entries) {
                if (e.target.port() == requested.port() && isLoopback(e.target.host())) {
                    best = e;
                }
            }
        }
        if (best == null) {
            return Optional.empty();
        }
        return Optional.of(new Route(requested, best.target, best.grant, best.view.jti()));
    }

    /** The granted targets, for status output (no grants). */
    public List<String> targets() {
        return entries.stream().map(e -> e.target + " (grant " + e.view.jti() + ", expires " + e.view.expiresAt() + ")")
                .toList();
    }

    static boolean isLoopback(String host) {
        return LOOPBACK_NAMES.contains(host) || host.startsWith("127.");
    }
}
