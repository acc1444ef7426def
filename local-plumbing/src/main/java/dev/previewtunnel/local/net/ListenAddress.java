package dev.previewtunnel.local.net;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.regex.Pattern;

/**
 * A {@code HOST:PORT} or {@code [V6]:PORT} address to listen on. A bind address, not a stream target (that is
 * the mux {@code Authority}): port 0 (any free port) and IPv6 zone ids are allowed. IPv4 dotted-quad and IPv6
 * literals are used as they are, never looked up; a name is resolved once, by {@link #resolve()}.
 *
 * @param host an IPv4 literal, an IPv6 literal (without brackets) or a name
 * @param port 0 to 65535
 */
public record ListenAddress(String host, int port) implements ListenEndpoint {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,253}");
    private static final Pattern IPV4 = Pattern.compile(
            "([0-9]{1,3})\\.([0-9]{1,3})\\.([0-9]{1,3})\\.([0-9]{1,3})");
    private static final Pattern IPV6_CHARS = Pattern.compile("[0-9A-Fa-f:.]+");
    private static final Pattern ZONE = Pattern.compile("[A-Za-z0-9._-]{1,64}");

    /**
     * Parses without resolving anything.
     *
     * @throws IllegalArgumentException with the problem alone ("missing :PORT (IPv6 needs brackets)"...), never
     *                                  quoting the input
     */
    public static ListenAddress parse(String text) {
        if (text == null || text.isEmpty() || text.length() > 300) {
            throw new IllegalArgumentException("empty or too long");
        }
        String host;
        String portText;
        if (text.startsWith("[")) {
            int close = text.indexOf(']');
            if (close < 0 || close + 1 >= text.length() || text.charAt(close + 1) != ':') {
                throw new IllegalArgumentException("malformed IPv6 address");
            }
            host = text.substring(1, close);
            portText = text.substring(close + 2);
            if (ipv6Literal(host) == null) {
                throw new IllegalArgumentException("malformed IPv6 address");
            }
        } else {
            int colon = text.lastIndexOf(':');
            if (colon <= 0 || text.indexOf(':') != colon) {
                throw new IllegalArgumentException("missing :PORT (IPv6 needs brackets)");
            }
            host = text.substring(0, colon);
            portText = text.substring(colon + 1);
            if (!NAME.matcher(host).matches()) {
                throw new IllegalArgumentException("invalid host");
            }
        }
        if (!portText.matches("[0-9]{1,5}") || Integer.parseInt(portText) > 65535) {
            throw new IllegalArgumentException("port must be 0..65535");
        }
        return new ListenAddress(host, Integer.parseInt(portText));
    }

    /** The socket address; an address literal is used as it is, a name is resolved (DNS) once. */
    @Override
    public InetSocketAddress resolve() throws UnknownHostException {
        InetAddress literal = literal(host);
        return new InetSocketAddress(literal != null ? literal : InetAddress.getByName(host), port);
    }

    /** True when {@link #host()} is an IP address literal (IPv4 dotted quad or IPv6), not a name. */
    public boolean isLiteral() {
        return literal(host) != null;
    }

    @Override
    public String toString() {
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }

    /**
     * {@code 127.0.0.1:7443}, {@code [::1]:7443}: IPv6 in RFC 5952 form (lower case, the longest run of zero
     * groups as "::"), in brackets, without a zone id; an unresolved address by its host string.
     */
    public static String format(InetSocketAddress a) {
        InetAddress address = a.getAddress();
        if (address == null) {
            return a.getHostString() + ":" + a.getPort();
        }
        if (address instanceof Inet6Address) {
            return "[" + rfc5952(address.getAddress()) + "]:" + a.getPort();
        }
        return address.getHostAddress() + ":" + a.getPort();
    }

    /** An IPv4 dotted-quad or IPv6 literal as an address (IPv4-mapped IPv6 becomes IPv4), else null. No DNS. */
    static InetAddress literal(String host) {
        if (host == null) {
            return null;
        }
        var m = IPV4.matcher(host);
        if (m.matches()) {
            byte[] b = new byte[4];
            for (int i = 0; i < 4; i++) {
                int v = Integer.parseInt(m.group(i + 1));
                if (v > 255) {
                    return null;
                }
                b[i] = (byte) v;
            }
            try {
                return InetAddress.getByAddress(b);
            } catch (UnknownHostException e) {
                throw new AssertionError(e); // cannot happen for 4 bytes
            }
        }
        return ipv6Literal(host);
    }

    /**
     * An IPv6 literal, optionally with a zone ({@code fe80::1%eth0}), else null. The JDK parses a bracketed
     * literal itself and never consults DNS for it; the character check makes sure nothing else is passed.
     */
    private static InetAddress ipv6Literal(String host) {
        int percent = host.indexOf('%');
        String address = percent < 0 ? host : host.substring(0, percent);
        if (address.indexOf(':') < 0 || !IPV6_CHARS.matcher(address).matches()
                || (percent >= 0 && !ZONE.matcher(host.substring(percent + 1)).matches())) {
            return null;
        }
        try {
            return InetAddress.getByName("[" + host + "]");
        } catch (UnknownHostException e) {
            return null; // malformed, or an unknown zone
        }
    }

    private static String rfc5952(byte[] b) {
        int[] groups = new int[8];
        for (int i = 0; i < 8; i++) {
            groups[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
        }
        int bestStart = -1;
        int bestLength = 1; // a single zero group is not compressed
        for (int i = 0; i < 8; ) {
            if (groups[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && groups[j] == 0) {
                j++;
            }
            if (j - i > bestLength) { // strictly longer: the first of equal runs wins
                bestStart = i;
                bestLength = j - i;
            }
            i = j;
        }
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLength - 1;
                continue;
            }
            if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
                sb.append(':');
            }
            sb.append(Integer.toHexString(groups[i]));
        }
        return sb.toString();
    }
}
