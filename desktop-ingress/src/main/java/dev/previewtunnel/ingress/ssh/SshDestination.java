package dev.previewtunnel.ingress.ssh;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where {@code open} connects: {@code ssh://[USER@]HOST[:PORT]}, passed to the system {@code ssh} as {@code -l USER
 * -p PORT HOST}. Nothing parsed here can start with {@code -}, so no part is ever read by {@code ssh} as an option
 * (the argument-injection class of bugs of ssh:// handlers); only characters a host name, an IP literal or a login
 * name use are accepted, so nothing reaches a shell either.
 *
 * @param user null: ssh's default (the config's User, else the local login name)
 * @param port 0: ssh's default (the config's Port, else 22)
 */
public record SshDestination(String user, String host, int port) {
    private static final String SCHEME = "ssh://";
    private static final Pattern USER = Pattern.compile("[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}");
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}");
    private static final Pattern V6 = Pattern.compile("[0-9A-Fa-f:.]{2,45}");
    private static final Pattern AUTHORITY =
            Pattern.compile("(?:([^@]*)@)?(\\[[^\\]]*\\]|[^:\\[\\]]*)(?::([0-9]{1,5}))?");

    public SshDestination {
        if (host == null || !(NAME.matcher(host).matches() || isV6(host))) {
            throw new IllegalArgumentException("not a host name or IP address: '" + printable(host) + "'");
        }
        if (user != null && !USER.matcher(user).matches()) {
            throw new IllegalArgumentException("not a login name: '" + printable(user)
                    + "' (letters, digits, '.', '_' and '-', not first)");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 1-65535, got " + port);
        }
    }

    /** Parses {@code ssh://[USER@]HOST[:PORT]} (an IPv6 address in brackets; a trailing '/' is allowed). */
    public static SshDestination parse(String text) {
        if (text == null || !text.regionMatches(true, 0, SCHEME, 0, SCHEME.length())) {
            throw new IllegalArgumentException("expected ssh://[USER@]HOST[:PORT], got '" + printable(text) + "'");
        }
        String rest = text.substring(SCHEME.length());
        if (rest.endsWith("/")) {
            rest = rest.substring(0, rest.length() - 1);
        }
        Matcher m = AUTHORITY.matcher(rest);
        if (rest.isEmpty() || !m.matches()) {
            throw new IllegalArgumentException("expected ssh://[USER@]HOST[:PORT] (an IPv6 address as [::1]), got '"
                    + printable(text) + "'");
        }
        String host = m.group(2);
        if (host.startsWith("[")) {
            host = host.substring(1, host.length() - 1);
            if (!isV6(host)) {
                throw new IllegalArgumentException("not an IPv6 address in [...]: '" + printable(text) + "'");
            }
        } else if (host.isEmpty()) {
            throw new IllegalArgumentException("no host in '" + printable(text) + "'");
        }
        int port = 0;
        if (m.group(3) != null) {
            port = Integer.parseInt(m.group(3));
            if (port == 0 || port > 65535) {
                throw new IllegalArgumentException("port must be 1-65535 in '" + printable(text) + "'");
            }
        }
        return new SshDestination(m.group(1), host, port);
    }

    /** {@code user@host:port} as written (IPv6 in brackets when a port follows), for messages. */
    public String shown() {
        String h = isV6(host) && port != 0 ? "[" + host + "]" : host;
        return (user == null ? "" : user + "@") + h + (port == 0 ? "" : ":" + port);
    }

    /** A stable, filesystem-safe id for state paths: {@code [user@]host[_port]}, other characters as '_'. */
    public String key() {
        String k = (user == null ? "" : user + "@") + host + (port == 0 ? "" : "_" + port);
        return k.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9._@-]", "_");
    }

    @Override
    public String toString() {
        return "ssh://" + (user == null ? "" : user + "@") + (isV6(host) ? "[" + host + "]" : host)
                + (port == 0 ? "" : ":" + port);
    }

    private static boolean isV6(String host) {
        return host != null && host.indexOf(':') >= 0 && V6.matcher(host).matches();
    }

    private static String printable(String s) {
        if (s == null) {
            return "";
        }
        String t = s.length() > 80 ? s.substring(0, 80) + "..." : s;
        return t.replaceAll("\\p{Cntrl}", "?");
    }
}
