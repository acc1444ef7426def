package dev.previewtunnel.mux.wire;

import io.netty.util.NetUtil;

import java.util.Locale;

/**
 * A {@code host:port} authority as it appears in a CONNECT request or an HTTP/2 {@code :authority}.
 * IPv6 literals are written in brackets and kept without them in {@link #host()}.
 */
public record Authority(String host, int port) {

    public Authority {
        if (host == null || host.isEmpty()) {
            throw new IllegalArgumentException("empty host");
        }
        if (port < 1 || port > 65_535) {
            throw new IllegalArgumentException("port out of range");
        }
        host = host.toLowerCase(Locale.ROOT);
    }

    /**
     * Parses {@code host:port} or {@code [v6]:port}. The port is required. Rejects user-info, paths and
     * anything but the characters a host name or address literal may contain, so the value is safe to log.
     */
    public static Authority parse(CharSequence text) {
        if (text == null) {
            throw new IllegalArgumentException("missing authority");
        }
        String s = text.toString();
        if (s.length() > 300) {
            throw new IllegalArgumentException("authority too long");
        }
        String host;
        String portText;
        if (s.startsWith("[")) {
            int close = s.indexOf(']');
            if (close < 0 || close + 1 >= s.length() || s.charAt(close + 1) != ':') {
                throw new IllegalArgumentException("malformed IPv6 authority");
            }
            host = s.substring(1, close);
            // No zone: Netty's check takes anything after '%' (control characters too), and a zone names an
            // interface of one machine, nothing a grant or a log line should carry.
            if (host.indexOf('%') >= 0 || !NetUtil.isValidIpV6Address(host)) {
                throw new IllegalArgumentException("malformed IPv6 literal");
            }
            portText = s.substring(close + 2);
        } else {
            int colon = s.lastIndexOf(':');
            if (colon <= 0 || s.indexOf(':') != colon) {
                throw new IllegalArgumentException("authority needs host:port");
            }
            host = s.substring(0, colon);
            portText = s.substring(colon + 1);
            for (int i = 0; i < host.length(); i++) {
                char c = host.charAt(i);
                boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                        || c == '-' || c == '.' || c == '_';
                if (!ok) {
                    throw new IllegalArgumentException("invalid character in host");
                }
            }
        }
        int port = decimalDigits(portText);
        if (port < 0) {
            throw new IllegalArgumentException("invalid port");
        }
        return new Authority(host, port);
    }

    /**
     * The value of one to five ASCII digits ({@code 0}-{@code 99999}), or -1 for anything else (no sign, no other
     * script's digits, which {@link Integer#parseInt} would take): a port's digits before the caller's own form and
     * range checks. A loop, not a stream: it runs once per stream and per proxied request.
     */
    public static int decimalDigits(String text) {
        if (text.isEmpty() || text.length() > 5) {
            return -1;
        }
        int value = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            value = value * 10 + (c - '0');
        }
        return value;
    }

    /** True when the host is an IPv6 literal (and so is bracketed in {@link #toString()}). */
    public boolean isIpv6Literal() {
        return host.indexOf(':') >= 0;
    }

    @Override
    public String toString() {
        return (isIpv6Literal() ? "[" + host + "]" : host) + ":" + port;
    }
}
