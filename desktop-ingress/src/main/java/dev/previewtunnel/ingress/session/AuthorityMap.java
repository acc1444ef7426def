package dev.previewtunnel.ingress.session;

import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.mux.wire.Authority;
import io.netty.util.NetUtil;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * One browser session's map from the authority the browser asks for to a granted target. Two mappings:
 *
 * <ul>
 *   <li><b>Loopback passthrough</b> (default): {@code localhost:P}, {@code 127.0.0.1:P} and {@code [::1]:P}
 *       mean the environment's loopback port P when a grant names a loopback target on port P. The browser
 *       keeps the very origin the dev server expects, so HMR, OAuth callbacks and cookies need no
 *       configuration. It applies only while the grants for port P come from a single environment.</li>
 *   <li><b>Virtual hosts</b>: {@code NAME.ENV.preview.localhost:P} (suffix configurable), for sessions that see
 *       several environments. NAME is the label given when the grant was attached; by default it is
 *       {@code pP} for a target {@code localhost:P} and {@code HOST-pP} for any other target host (its DNS-label
 *       form: {@code 127-0-0-2-p5173}, {@code api-internal-p8080}), so grants to two hosts on the same port get
 *       two names. The
 *       authority is a pure function of (name or target, environment, port), so it is the same after every
 *       restart of the ingress on whatever port, and cookies, localStorage and service workers survive.
 *       {@code *.localhost} is a secure context in Chromium and accepted by Vite's default host check.</li>
 * </ul>
 *
 * <p>A virtual host names one target. A grant whose virtual host is already taken by a grant for another target
 * (the same NAME given twice, or two host names with the same label form) is refused with
 * {@link VirtualHostTakenException}, never silently put in the other's place; a grant for the same target under
 * the same name replaces the older one (refresh).
 *
 * <p>The desktop holds no verification key: grants are read without verification only to learn their target
 * ({@link UnverifiedGrantView}); the gateway verifies every one on every stream.
 */
public final class AuthorityMap {
    public static final String DEFAULT_SUFFIX = "preview.localhost";
    private static final Set<String> LOOPBACK_NAMES = Set.of("localhost", "127.0.0.1", "::1");

    private final String suffix;
    private final List<Entry> entries = new CopyOnWriteArrayList<>();

    /** One attached grant and the authorities it answers to. */
    public record Entry(String grant, UnverifiedGrantView view, Authority target, String name, Authority virtualHost) {
        public String grantId() {
            return view.jti();
        }

        @Override
        public String toString() {
            return "Entry[" + target + " as " + virtualHost + ", grant " + view.jti() + "]";
        }
    }

    public AuthorityMap() {
        this(DEFAULT_SUFFIX);
    }

    public AuthorityMap(String suffix) {
        this.suffix = suffix.toLowerCase(Locale.ROOT);
    }

    /** Adds a grant under the default name; see {@link #add(String, String)}. */
    public Entry add(String grant) {
        return add(grant, null);
    }

    /**
     * Adds a grant; a newer grant for the same target and name replaces the older one (refresh).
     *
     * @throws IllegalArgumentException (without echoing the grant) when it is not a readable grant
     * @throws VirtualHostTakenException when its virtual host already names another target
     */
    public synchronized Entry add(String grant, String name) {
        UnverifiedGrantView view = UnverifiedGrantView.decode(grant);
        Authority target = new Authority(view.targetHost(), view.targetPort());
        String label = label(name == null || name.isBlank() ? defaultName(target) : name);
        Authority vhost = new Authority(label + "." + label(view.environment()) + "." + suffix, view.targetPort());
        for (Entry e : entries) {
            boolean sameTarget = e.target.equals(target) && e.view.environment().equals(view.environment());
            if (e.virtualHost.equals(vhost) && !sameTarget) {
                throw new VirtualHostTakenException(vhost, e.grantId(), e.target);
            }
        }
        Entry entry = new Entry(grant, view, target, label, vhost);
        entries.removeIf(e -> e.target.equals(target) && e.name.equals(label)
                && e.view.environment().equals(view.environment()));
        entries.add(entry);
        return entry;
    }

    /**
     * The NAME of a grant attached without one: {@code pP} for {@code localhost:P} (the name earlier versions gave
     * every target, kept for the common case so its origin, cookies and storage stay), {@code HOST-pP} for any
     * other host, {@code 127.0.0.1} included: two distinct hosts never share a default name unless their label
     * forms coincide, which {@link #add} refuses.
     */
    static String defaultName(Authority target) {
        String port = "p" + target.port();
        if ("localhost".equalsIgnoreCase(target.host())) {
            return port;
        }
        String host = label(target.host());
        return (host.length() + 1 + port.length() > 63 ? host.substring(0, 62 - port.length()) : host) + "-" + port;
    }

    /** Removes a grant by id; returns whether it was attached. */
    public synchronized boolean removeGrant(String grantId) {
        return entries.removeIf(e -> grantId.equals(e.grantId()));
    }

    /**
     * A refresh, atomically against detaches: when {@code oldGrantId} is still attached, attaches {@code grant}
     * (under {@code name}) in its place and returns the new entry. When it is not, another request's refresh
     * already replaced it, or it was detached: returns the entry now attached for the same target and
     * environment (use it; {@code grant} is not attached), or empty when there is none (a detach: a refresh must
     * not undo it).
     *
     * @throws IllegalArgumentException when {@code grant} is not a readable grant
     * @throws VirtualHostTakenException as {@link #add}
     */
    public synchronized Optional<Entry> replace(String oldGrantId, String grant, String name) {
        if (hasGrant(oldGrantId)) {
            Entry fresh = add(grant, name);
            if (!fresh.grantId().equals(oldGrantId)) {
                removeGrant(oldGrantId);
            }
            return Optional.of(fresh);
        }
        UnverifiedGrantView view = UnverifiedGrantView.decode(grant);
        return current(new Authority(view.targetHost(), view.targetPort()), view.environment());
    }

    /** The newest entry attached for {@code target} in {@code environment}, if any. */
    public Optional<Entry> current(Authority target, String environment) {
        Entry found = null;
        for (Entry e : entries) {
            if (e.target.equals(target) && e.view.environment().equals(environment)) {
                found = e;
            }
        }
        return Optional.ofNullable(found);
    }

    /** Whether a grant with this id is attached. */
    public boolean hasGrant(String grantId) {
        for (Entry e : entries) {
            if (grantId.equals(e.grantId())) {
                return true;
            }
        }
        return false;
    }

    public List<Entry> entries() {
        return List.copyOf(entries);
    }

    public Optional<Route> route(Authority requested) {
        Entry best = null;
        for (Entry e : entries) {
            if (e.virtualHost.equals(requested) || e.target.equals(requested)) {
                best = e;
            }
        }
        if (best == null && isPassthroughName(requested.host())) {
            List<Entry> candidates = new ArrayList<>();
            for (Entry e : entries) {
                if (e.target.port() == requested.port() && isLoopbackTarget(e.target.host())) {
                    candidates.add(e);
                }
            }
            boolean oneEnvironment = candidates.stream().map(e -> e.view.environment()).distinct().count() == 1;
            if (oneEnvironment) {
                best = candidates.get(candidates.size() - 1);
            }
        }
        if (best == null) {
            return Optional.empty();
        }
        return Optional.of(new Route(requested, best.target, best.grant, best.grantId(), best.view.environment()));
    }

    /** True when {@code host} is this map's virtual-host suffix or below it (a trailing dot is the same name). */
    public boolean isVirtualHost(String host) {
        String h = host.endsWith(".") ? host.substring(0, host.length() - 1) : host;
        return h.equals(suffix) || h.endsWith("." + suffix);
    }

    /**
     * Whether {@code suffix} may be a virtual-host suffix: lower-case DNS labels ([a-z0-9-], 1 to 63 each, not
     * starting or ending with '-'), at most 190 characters so that NAME.ENV.SUFFIX stays a valid host name, and not
     * all digits and dots (an IPv4 address).
     */
    public static boolean isValidSuffix(String suffix) {
        if (suffix == null || suffix.isEmpty() || suffix.length() > 190 || suffix.matches("[0-9.]+")) {
            return false;
        }
        for (String l : suffix.split("\\.", -1)) {
            if (!l.matches("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")) {
                return false;
            }
        }
        return true;
    }

    /**
     * The requested hosts loopback passthrough answers to: exactly {@code localhost}, {@code 127.0.0.1} and
     * {@code ::1} (hosts arrive lower-cased). Never a prefix match: {@code 127.evil.example} is a name anyone can
     * register, and other spellings ({@code 127.1}, {@code localhost.}, {@code [::ffff:127.0.0.1]}) are not what
     * the docs promise.
     */
    static boolean isPassthroughName(String host) {
        return LOOPBACK_NAMES.contains(host);
    }

    /**
     * Grant targets passthrough may stand for: the literal names above or an IPv4 dotted-quad literal in 127/8
     * (parsed as an address, not matched as text), so a grant for {@code 127.0.0.2:P} still serves
     * {@code localhost:P}.
     */
    static boolean isLoopbackTarget(String host) {
        if (LOOPBACK_NAMES.contains(host)) {
            return true;
        }
        return NetUtil.isValidIpV4Address(host) && NetUtil.createByteArrayFromIpAddressString(host)[0] == 127;
    }

    /** A DNS label from free text: lower case, [a-z0-9-], at most 63 characters, never empty. */
    static String label(String text) {
        StringBuilder b = new StringBuilder();
        for (char c : text.toLowerCase(Locale.ROOT).toCharArray()) {
            if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
                b.append(c);
            } else if (b.length() > 0 && b.charAt(b.length() - 1) != '-') {
                b.append('-');
            }
        }
        while (b.length() > 0 && b.charAt(b.length() - 1) == '-') {
            b.setLength(b.length() - 1);
        }
        if (b.length() > 63) {
            b.setLength(63);
        }
        return b.length() == 0 ? "x" : b.toString();
    }
}
