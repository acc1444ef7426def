package dev.previewtunnel.grants;

import java.util.Locale;

/**
 * Host and authority normalisation shared by the issuer and the verifier, so a grant's {@code host}
 * claim and an HTTP/2 {@code :authority} are compared in one canonical form:
 * DNS names and IPv4 literals lower-cased; IPv6 literals in RFC 5952 compressed form.
 * Pure string work: no DNS, no {@link java.net.InetAddress} (which may resolve names).
 */
final class TargetHost {
    private static final int MAX_HOST_LENGTH = 253;

    private TargetHost() {
    }

    /**
     * A host:port pair parsed from an authority; host is normalised (IPv6 without brackets, RFC 5952).
     * Not mux-protocol's {@code Authority}: grants must not depend on netty, and this is the canonical form a grant's
     * host claim is compared in, where that one is the target as the wire carries it.
     */
    record Canonical(String host, int port) {
    }

    /**
     * Canonical form of a host: accepts a DNS name, an IPv4 literal, or an IPv6 literal with or
     * without brackets. Zone ids ({@code %eth0}) are refused: they are meaningless to a remote peer.
     *
     * @throws IllegalArgumentException if it is none of those
     */
    static String normalise(String host) {
        if (host == null || host.isEmpty()) throw new IllegalArgumentException("host must not be blank");
        String h = host;
        if (h.startsWith("[")) {
            if (!h.endsWith("]") || h.length() < 3) throw new IllegalArgumentException("malformed IPv6 literal");
            h = h.substring(1, h.length() - 1);
            if (h.indexOf(':') < 0) throw new IllegalArgumentException("malformed IPv6 literal");
        }
        if (h.indexOf(':') >= 0) {
            return formatIpv6(parseIpv6(h));
        }
        if (h.length() > MAX_HOST_LENGTH) throw new IllegalArgumentException("host name too long");
        for (int i = 0; i < h.length(); i++) {
            char c = h.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '.' || c == '_';
            if (!ok) throw new IllegalArgumentException("host contains an invalid character");
        }
        return h.toLowerCase(Locale.ROOT);
    }

    /**
     * Parses {@code host:port} as it appears in an HTTP/2 {@code :authority}; IPv6 must be bracketed.
     * The port is required: targets are dev servers on explicit ports, never scheme defaults.
     *
     * @throws IllegalArgumentException if malformed
     */
    static Canonical parseAuthority(String authority) {
        if (authority == null || authority.isEmpty()) throw new IllegalArgumentException("no authority");
        if (authority.indexOf('@') >= 0) throw new IllegalArgumentException("userinfo not allowed");
        String host;
        String port;
        if (authority.startsWith("[")) {
            int close = authority.indexOf(']');
            if (close < 0 || close + 1 >= authority.length() || authority.charAt(close + 1) != ':') {
                throw new IllegalArgumentException("malformed authority");
            }
            host = authority.substring(0, close + 1);
            port = authority.substring(close + 2);
        } else {
            int colon = authority.lastIndexOf(':');
            if (colon <= 0 || authority.indexOf(':') != colon) {
                throw new IllegalArgumentException("malformed authority");
            }
            host = authority.substring(0, colon);
            port = authority.substring(colon + 1);
        }
        return new Canonical(normalise(host), parsePort(port));
    }

    private static int parsePort(String s) {
        if (s.isEmpty() || s.length() > 5) throw new IllegalArgumentException("malformed port");
        int value = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') throw new IllegalArgumentException("malformed port");
            value = value * 10 + (c - '0');
        }
        if (value < 1 || value > 65535) throw new IllegalArgumentException("port out of range");
        return value;
    }

    /** Eight 16-bit groups; supports "::" compression and a trailing dotted IPv4 part. */
    private static int[] parseIpv6(String s) {
        if (s.indexOf('%') >= 0) throw new IllegalArgumentException("IPv6 zone ids not allowed");
        int dbl = s.indexOf("::");
        if (dbl >= 0 && s.indexOf("::", dbl + 1) >= 0) throw new IllegalArgumentException("malformed IPv6 literal");
        int[] head = dbl >= 0 ? parseGroups(s.substring(0, dbl), false) : parseGroups(s, true);
        int[] tail = dbl >= 0 ? parseGroups(s.substring(dbl + 2), true) : new int[0];
        int total = head.length + tail.length;
        if ((dbl < 0 && total != 8) || (dbl >= 0 && total > 7)) {
            throw new IllegalArgumentException("malformed IPv6 literal");
        }
        int[] groups = new int[8];
        System.arraycopy(head, 0, groups, 0, head.length);
        System.arraycopy(tail, 0, groups, 8 - tail.length, tail.length);
        return groups;
    }

    private static int[] parseGroups(String s, boolean ipv4TailAllowed) {
        if (s.isEmpty()) return new int[0];
        String[] parts = s.split(":", -1);
        boolean v4Tail = ipv4TailAllowed && parts[parts.length - 1].indexOf('.') >= 0;
        int[] out = new int[parts.length + (v4Tail ? 1 : 0)];
        for (int i = 0; i < parts.length; i++) {
            String p = parts[i];
            if (v4Tail && i == parts.length - 1) {
                int v4 = parseIpv4(p);
                out[i] = v4 >>> 16;
                out[i + 1] = v4 & 0xffff;
                break;
            }
            if (p.isEmpty() || p.length() > 4) throw new IllegalArgumentException("malformed IPv6 literal");
            int g = 0;
            for (int j = 0; j < p.length(); j++) {
                int d = Character.digit(p.charAt(j), 16);
                if (d < 0) throw new IllegalArgumentException("malformed IPv6 literal");
                g = g * 16 + d;
            }
            out[i] = g;
        }
        return out;
    }

    private static int parseIpv4(String s) {
        String[] octets = s.split("\\.", -1);
        if (octets.length != 4) throw new IllegalArgumentException("malformed IPv6 literal");
        int v = 0;
        for (String o : octets) {
            if (o.isEmpty() || o.length() > 3) throw new IllegalArgumentException("malformed IPv6 literal");
            int n = 0;
            for (int i = 0; i < o.length(); i++) {
                char c = o.charAt(i);
                if (c < '0' || c > '9') throw new IllegalArgumentException("malformed IPv6 literal");
                n = n * 10 + (c - '0');
            }
            if (n > 255) throw new IllegalArgumentException("malformed IPv6 literal");
            v = (v << 8) | n;
        }
        return v;
    }

    /** RFC 5952: lower-case hex, no leading zeros, longest run (>= 2) of zero groups as "::". */
    private static String formatIpv6(int[] g) {
        int bestStart = -1;
        int bestLen = 0;
        for (int i = 0; i < 8; ) {
            if (g[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && g[j] == 0) j++;
            if (j - i > bestLen && j - i >= 2) {
                bestStart = i;
                bestLen = j - i;
            }
            i = j;
        }
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLen - 1;
                continue;
            }
            if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') sb.append(':');
            sb.append(Integer.toHexString(g[i]));
        }
        return sb.toString();
    }
}
