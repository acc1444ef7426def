package dev.previewtunnel.sampleapp;

/**
 * {@code host:port} / {@code [v6]:port} parsing and formatting for the command line: a bind address (port 0
 * allowed). Not local-plumbing's {@code ListenAddress}: the sample app stands for any dev server and depends on no
 * project module.
 */
record HostPort(String host, int port) {

    static HostPort parse(String s) {
        String host;
        String port;
        if (s.startsWith("[")) {
            int close = s.indexOf(']');
            if (close < 0 || close + 1 >= s.length() || s.charAt(close + 1) != ':') {
                throw new IllegalArgumentException("expected [host]:port, got " + s);
            }
            host = s.substring(1, close);
            port = s.substring(close + 2);
        } else {
            int colon = s.lastIndexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("expected host:port, got " + s);
            }
            host = s.substring(0, colon);
            port = s.substring(colon + 1);
        }
        int p;
        try {
            p = Integer.parseInt(port);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad port in " + s);
        }
        if (p < 0 || p > 65535) {
            throw new IllegalArgumentException("bad port in " + s);
        }
        return new HostPort(host, p);
    }

    static String format(String host, int port) {
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }
}
