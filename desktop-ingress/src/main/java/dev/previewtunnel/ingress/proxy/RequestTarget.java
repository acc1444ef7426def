package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.wire.Authority;
import io.netty.util.NetUtil;

import java.net.URI;
import java.net.URISyntaxException;

/**
 * The authority a browser's request names, read strictly, so that what is matched against the grants is plain
 * text with one meaning. Matching is exact (see AuthorityMap): other spellings of a loopback address
 * ({@code 127.1}, {@code 0x7f.1}, {@code 2130706433}, which Chromium canonicalises before it asks the proxy) are
 * well-formed here but never equal a literal, so they map to nothing. Pure: no I/O, no Channel.
 *
 * <p>A host is a name or IPv4 address of {@code [A-Za-z0-9_-]} labels (no empty label, one optional trailing dot,
 * at most 254 characters, compared without case) or an IPv6 literal in brackets without a zone. Percent-encoding
 * and user-info are refused. A port is 1-65535 in decimal without sign or leading zero.
 */
final class RequestTarget {
    /** An absolute-form {@code http://} request: its authority and the origin-form target to send on. */
    record Absolute(Authority authority, String originForm) {
    }

    /** The request-target is not an {@code http://} URL with a host (or carries user-info): not proxied. */
    static final class UnsupportedException extends Exception {
        UnsupportedException(String safeTarget) {
            super(safeTarget, null, false, false);
        }

        /** Scheme and host only, safe to log. */
        String safeTarget() {
            return getMessage();
        }
    }

    private RequestTarget() {
    }

    /**
     * A CONNECT request-target: {@code host:port} (RFC 9112 section 3.2.3), port required.
     *
     * @throws IllegalArgumentException when it is not one canonical authority
     */
    static Authority connect(String target) {
        return authority(target, -1);
    }

    /**
     * An absolute-form request-target; the port defaults to 80.
     *
     * @throws UnsupportedException     for another scheme, no host, or user-info
     * @throws IllegalArgumentException when it is not a valid URL with one canonical authority
     */
    static Absolute absolute(String target) throws UnsupportedException {
        URI uri;
        try {
            uri = new URI(target);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("not a URL");
        }
        if (!"http".equalsIgnoreCase(uri.getScheme()) || uri.getRawAuthority() == null
                || uri.getRawUserInfo() != null || uri.getRawAuthority().indexOf('@') >= 0) {
            // Never the raw target in a log line: its user-info or query can carry a credential.
            throw new UnsupportedException(schemeAndHost(uri));
        }
        Authority authority = authority(uri.getRawAuthority(), 80);
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        return new Absolute(authority, uri.getRawQuery() == null ? path : path + "?" + uri.getRawQuery());
    }

    /**
     * Whether a request's Host header values name {@code requested}: exactly one value (RFC 9112 section 3.2: two
     * Host fields are a 400), in the same strict syntax. Without a port it means {@code defaultPort}.
     */
    static boolean hostMatches(java.util.List<String> hostHeaders, Authority requested, int defaultPort) {
        if (hostHeaders.size() != 1) {
            return false;
        }
        try {
            return authority(hostHeaders.get(0), defaultPort).equals(requested);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /**
     * {@code host[:port]} in the strict syntax; {@code defaultPort} when the port is absent, or -1 when it is
     * required.
     */
    static Authority authority(String text, int defaultPort) {
        if (text == null || text.isEmpty() || text.length() > 300) {
            throw new IllegalArgumentException("empty or overlong authority");
        }
        String host;
        String port;
        if (text.startsWith("[")) {
            int close = text.indexOf(']');
            if (close < 0) {
                throw new IllegalArgumentException("unclosed IPv6 literal");
            }
            host = text.substring(1, close);
            if (host.indexOf('%') >= 0 || !NetUtil.isValidIpV6Address(host)) {
                throw new IllegalArgumentException("not an IPv6 literal (zones are refused)");
            }
            String rest = text.substring(close + 1);
            if (!rest.isEmpty() && !rest.startsWith(":")) {
                throw new IllegalArgumentException("junk after the IPv6 literal");
            }
            port = rest.isEmpty() ? null : rest.substring(1);
        } else {
            int colon = text.indexOf(':');
            if (colon >= 0 && text.indexOf(':', colon + 1) >= 0) {
                throw new IllegalArgumentException("more than one ':'");
            }
            host = colon < 0 ? text : text.substring(0, colon);
            port = colon < 0 ? null : text.substring(colon + 1);
            checkHostName(host);
        }
        int p;
        if (port == null) {
            if (defaultPort < 0) {
                throw new IllegalArgumentException("port required");
            }
            p = defaultPort;
        } else {
            p = port(port);
        }
        return new Authority(host, p);
    }

    /** Labels of {@code [A-Za-z0-9_-]}: nothing a resolver or URL parser could read two ways. */
    private static void checkHostName(String host) {
        if (host.isEmpty() || host.length() > 254 || host.startsWith(".") || host.contains("..")
                || (host.endsWith(".") && host.length() == 1)) {
            throw new IllegalArgumentException("empty host or label");
        }
        for (int i = 0; i < host.length(); i++) {
            char c = host.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '.' || c == '_';
            if (!ok) {
                throw new IllegalArgumentException("invalid character in host");
            }
        }
    }

    private static int port(String text) {
        int p = text.startsWith("0") ? -1 : Authority.decimalDigits(text);
        if (p < 1) {
            throw new IllegalArgumentException("port must be 1-65535 in decimal without sign or leading zero");
        }
        if (p > 65_535) {
            throw new IllegalArgumentException("port out of range");
        }
        return p;
    }

    /** Scheme and host[:port] of a request-target, for logs: never its user-info, path or query. */
    static String schemeAndHost(URI target) {
        String scheme = target.getScheme() == null ? "" : target.getScheme() + ":";
        if (target.getHost() == null) {
            return scheme.isEmpty() ? "request" : scheme;
        }
        return scheme + "//" + target.getHost() + (target.getPort() == -1 ? "" : ":" + target.getPort());
    }
}
