package dev.previewtunnel.ingress.fuzz;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;

/**
 * Generates the ingress fuzz cases: what a browser (or anything else on the desktop) may send to the proxy port.
 * Well-formed proxy requests come with the exact answer the ingress owes them (status and {@code ptun-error} code);
 * syntactically broken and mutated ones only with the properties every answer has. Every case is a pure function
 * of its seed.
 */
final class ProxyFuzzCases {

    /** Who the ingress knows: two sessions, their grants (by authority), and a virtual host. */
    record Material(String user, String password, String otherUser, String otherPassword, String virtualHost) {
    }

    static final class Case {
        final long index;
        final long seed;
        String kind;
        String note = "";
        byte[] wire;
        int[] cuts = new int[0];
        /** The client half-closes (FIN) after its bytes. */
        boolean fin;
        /** Expected status, or 0 for any of the allowed error statuses (or no answer, if the head is incomplete). */
        int status;
        /** Expected ptun-error code, or null for any. */
        String code;
        /** The first request is HEAD: its answer carries no body. */
        boolean head;
        /** The expected answer is for a body whose framing breaks after a valid head (framing cases). */
        boolean bodyFraming;
        /** Strings that must never appear in an answer (credentials, as sent and decoded). */
        final List<String> secrets = new ArrayList<>();

        Case(long index, long seed) {
            this.index = index;
            this.seed = seed;
        }

        @Override
        public String toString() {
            return "case " + index + " (" + kind + (note.isEmpty() ? "" : ", " + note) + ", expect "
                    + (status == 0 ? "any" : status + " " + code) + ")";
        }
    }

    private final Material m;

    ProxyFuzzCases(Material material) {
        this.m = material;
    }

    // ================================================================ targets, grouped by what the ingress must do

    /** MALFORMED: the request line itself is invalid HTTP (the decoder refuses it before anything else). */
    enum Target { ORIGIN, GRANTED, GRANTED_OTHER_SESSION, NOT_GRANTED, BAD, UNSUPPORTED, MALFORMED }

    record Pick(String text, Target kind, String hostHeader) {
    }

    private static final String[] CONNECT_GRANTED = {"localhost:5173", "127.0.0.1:5173", "[::1]:5173",
            "LocalHost:5173", "127.0.0.1:8080", "localhost:8080", "[::1]:8080"};
    private static final String[] CONNECT_NOT_GRANTED = {"localhost:5174", "example.com:443", "10.0.0.1:80",
            "169.254.169.254:80", "[::ffff:127.0.0.1]:5173", "localhost:1", "127.0.0.1:65535", "0.0.0.0:5173",
            "preview.localhost:5173", "x.preview.localhost:5173", "localhost.:5173", "a.b-c_d:5173",
            "[0:0:0:0:0:0:0:1]:5173", "127.9.8.7:5173", "127.0.0.2:5173", "127.evil.example:5173",
            "127.0.0.1.evil.example:5173", "localhost.evil.example:5173", "[::ffff:7f00:1]:5173",
            "evil.localhost:5173", "LOCALHOST.:5173", "127.1:5173", "127.0.1:5173", "0x7f.1:5173",
            "0x7f000001:5173", "2130706433:5173", "0177.0.0.1:5173", "127.000.000.001:5173", "127.0.0.1.:5173"};
    private static final String[] CONNECT_BAD = {"localhost", "localhost:", ":5173", "localhost:5173:1",
            "[::1:5173", "[::1]", "[zz]:5173", "localhost:99999", "localhost:0", "localhost:-1",
            "localhost:+80", "localhost:0x50", "user@localhost:5173", "localhost:5173/x", "http://localhost:5173",
            "/", "*", "%6c%6f:5173", "localhost:05173", "[::1%lo]:5173", "a..b:5173", ".localhost:5173"};
    private static final String[] URL_GRANTED = {"http://localhost:5173/", "http://127.0.0.1:5173/a/b?c=d&e",
            "http://[::1]:5173/", "HTTP://LOCALHOST:5173/X", "http://127.0.0.1:8080", "http://localhost:8080/?",
            "http://localhost:5173/#frag"};
    private static final String[] URL_NOT_GRANTED = {"http://localhost/", "http://localhost:5174/",
            "http://example.com/", "http://10.0.0.1:5173/", "http://[::2]:5173/", "http://localhost:1/x",
            "http://127.evil.example:5173/", "http://localhost.:5173/",
            "http://[::ffff:127.0.0.1]:5173/", "http://127.0.0.2:5173/", "http://evil.localhost:5173/",
            "http://127.1:5173/", "http://0x7f.1:5173/", "http://2130706433:5173/", "http://127.0.0.1.:5173/"};
    private static final String[] URL_UNSUPPORTED = {"https://localhost:5173/", "ftp://localhost:5173/",
            "ws://localhost:5173/", "http:///x", "http://user:pw@localhost:5173/", "file:///etc/passwd",
            "mailto:x@y", "http:/localhost:5173/", "javascript:alert(1)", "http://localhost:5173@127.evil.example/",
            "http://@localhost:5173/"};
    private static final String[] URL_BAD = {"http://[::1/", "http://[::1]:99999/", "http://localhost:5173/%",
            "http://localhost:5173/{}", "http://[v1.x]:5173/", "http://localhost:05173/",
            "http://%6c%6f:5173/", "http://[::1%25lo]:5173/"};
    /** A space splits the request line into four parts: not HTTP at all. */
    private static final String[] MALFORMED = {"http://local host:5173/", "http://localhost:5173/a b",
            "local host:5173"};
    private static final String[] ORIGIN = {"/", "/index.html", "/?x=1", "*", "/..%2f..%2f", "//localhost:5173/"};

    Pick pickTarget(Random r, boolean connect, boolean s2) {
        int k = r.nextInt(100);
        if (connect) {
            if (k < 45) {
                return new Pick(CONNECT_GRANTED[r.nextInt(CONNECT_GRANTED.length)], Target.GRANTED, null);
            }
            if (k < 52) {
                return new Pick(m.virtualHost(), Target.GRANTED, null);
            }
            if (k < 60) {
                return new Pick("localhost:9000", Target.GRANTED_OTHER_SESSION, null);
            }
            if (k < 80) {
                return new Pick(CONNECT_NOT_GRANTED[r.nextInt(CONNECT_NOT_GRANTED.length)], Target.NOT_GRANTED,
                        null);
            }
            if (k < 97) {
                return new Pick(CONNECT_BAD[r.nextInt(CONNECT_BAD.length)], Target.BAD, null);
            }
            return new Pick(MALFORMED[r.nextInt(MALFORMED.length)], Target.MALFORMED, null);
        }
        if (k < 40) {
            String url = URL_GRANTED[r.nextInt(URL_GRANTED.length)];
            return new Pick(url, Target.GRANTED, hostHeaderFor(r, url));
        }
        if (k < 46) {
            String url = "http://" + m.virtualHost() + "/";
            return new Pick(url, Target.GRANTED, hostHeaderFor(r, url));
        }
        if (k < 52) {
            return new Pick("http://localhost:9000/", Target.GRANTED_OTHER_SESSION, null);
        }
        if (k < 64) {
            return new Pick(URL_NOT_GRANTED[r.nextInt(URL_NOT_GRANTED.length)], Target.NOT_GRANTED, null);
        }
        if (k < 74) {
            return new Pick(URL_UNSUPPORTED[r.nextInt(URL_UNSUPPORTED.length)], Target.UNSUPPORTED, null);
        }
        if (k < 80) {
            return new Pick(URL_BAD[r.nextInt(URL_BAD.length)], Target.BAD, null);
        }
        if (k < 82) {
            return new Pick(MALFORMED[r.nextInt(MALFORMED.length)], Target.MALFORMED, null);
        }
        return new Pick(ORIGIN[r.nextInt(ORIGIN.length)], Target.ORIGIN, null);
    }

    /** A Host header consistent with the URL (or none); the mismatching one is chosen separately. */
    private static String hostHeaderFor(Random r, String url) {
        if (r.nextInt(3) == 0) {
            return null;
        }
        String rest = url.substring(url.indexOf("://") + 3);
        int end = rest.length();
        for (char c : new char[] {'/', '?', '#'}) {
            int i = rest.indexOf(c);
            if (i >= 0 && i < end) {
                end = i;
            }
        }
        String authority = rest.substring(0, end);
        if (authority.indexOf(':', authority.startsWith("[") ? authority.indexOf(']') : 0) < 0) {
            authority = authority + (r.nextBoolean() ? ":80" : "");
        }
        return authority;
    }

    // ================================================================ credentials

    enum Auth { S1, S2, NONE, WRONG_PASSWORD, WRONG_USER, RIGHT_PASSWORD_OTHER_USER, GARBAGE, NOT_BASIC, NO_COLON,
        EMPTY, BAD_BASE64, LOWERCASE_SCHEME, PADDED, HUGE, TRUNCATED_PASSWORD, URL_SAFE_BASE64, DOUBLE_COLON }

    private static final Base64.Encoder B64 = Base64.getEncoder();

    /** The Proxy-Authorization value (null: no header) and whether it authenticates session 1 or 2 (0 if none). */
    record Credential(String header, int session) {
    }

    Credential credential(Random r, Case c, Auth a) {
        String up = m.user() + ":" + m.password();
        c.secrets.add(m.password());
        c.secrets.add(B64.encodeToString(up.getBytes(StandardCharsets.UTF_8)));
        c.secrets.add(m.otherPassword());
        return switch (a) {
            case S1 -> new Credential("Basic " + b64(up), 1);
            case S2 -> {
                String other = m.otherUser() + ":" + m.otherPassword();
                c.secrets.add(b64(other));
                yield new Credential("Basic " + b64(other), 2);
            }
            case NONE -> new Credential(null, 0);
            case WRONG_PASSWORD -> secret(c, new Credential("Basic " + b64(m.user() + ":" + m.password()
                    .substring(1) + "x"), 0));
            case WRONG_USER -> secret(c, new Credential("Basic " + b64("ptun-nobody:" + m.password()), 0));
            case RIGHT_PASSWORD_OTHER_USER -> secret(c, new Credential("Basic " + b64(m.otherUser() + ":"
                    + m.password()), 0));
            case GARBAGE -> new Credential("Basic " + printable(r, 1 + r.nextInt(60)), 0);
            case NOT_BASIC -> new Credential((r.nextBoolean() ? "Bearer " : "Digest username=") + b64(up), 0);
            case NO_COLON -> new Credential("Basic " + b64(m.user() + m.password()), 0);
            case EMPTY -> new Credential(r.nextBoolean() ? "" : "Basic ", 0);
            case BAD_BASE64 -> new Credential("Basic " + b64(up).replace('A', '*') + "!", 0);
            case LOWERCASE_SCHEME -> new Credential("basic " + b64(up), 1);
            case PADDED -> new Credential("Basic    " + b64(up) + "   ", 1);
            case HUGE -> new Credential("Basic " + "QUFB".repeat(1000 + r.nextInt(2000)), 0);
            case TRUNCATED_PASSWORD -> new Credential("Basic " + b64(m.user() + ":" + m.password()
                    .substring(0, m.password().length() - 1)), 0);
            case URL_SAFE_BASE64 -> {
                String url = Base64.getUrlEncoder().encodeToString(up.getBytes(StandardCharsets.UTF_8));
                // Only the same credential when the standard and URL-safe alphabets happen to agree.
                yield new Credential("Basic " + url, url.equals(b64(up)) ? 1 : 0);
            }
            case DOUBLE_COLON -> new Credential("Basic " + b64(m.user() + "::" + m.password()), 0);
        };
    }

    private static Credential secret(Case c, Credential credential) {
        c.secrets.add(credential.header().substring(6));
        return credential;
    }

    static String b64(String s) {
        return B64.encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    // ================================================================ generation

    Case generate(long index, long seed) {
        Random r = new Random(seed);
        Case c = new Case(index, seed);
        int pick = r.nextInt(100);
        if (pick < 40) {
            proxy(c, r);
        } else if (pick < 50) {
            syntax(c, r);
        } else if (pick < 60) {
            framing(c, r);
        } else if (pick < 80) {
            mutated(c, r);
        } else {
            random(c, r);
        }
        if (c.cuts.length == 0 && r.nextInt(3) == 0) {
            c.cuts = cutPoints(r, c.wire.length, 2 + r.nextInt(6));
        }
        if (!c.fin) {
            c.fin = r.nextInt(4) == 0;
        }
        if (c.bodyFraming && c.cuts.length > 0) {
            // Cut before the broken body part, the stream open (which fails here) may answer first: 502 or 400.
            c.status = 0;
            c.code = null;
        }
        return c;
    }

    private static final String[] METHODS = {"CONNECT", "CONNECT", "CONNECT", "GET", "GET", "POST", "HEAD", "PUT",
            "DELETE", "OPTIONS", "PATCH", "TRACE"};

    /** A well-formed request head (and body) with the exact answer it is owed. */
    void proxy(Case c, Random r) {
        c.kind = "proxy";
        String method = METHODS[r.nextInt(METHODS.length)];
        boolean connect = method.equals("CONNECT");
        Auth auth = r.nextInt(3) == 0 ? Auth.values()[r.nextInt(Auth.values().length)]
                : (r.nextInt(6) == 0 ? Auth.S2 : Auth.S1);
        Credential cred = credential(r, c, auth);
        Pick target = pickTarget(r, connect, cred.session() == 2);
        boolean hostMismatch = target.kind() != Target.ORIGIN && r.nextInt(8) == 0;
        boolean http10 = r.nextInt(8) == 0;
        StringBuilder b = new StringBuilder();
        b.append(method).append(' ').append(target.text()).append(' ').append(http10 ? "HTTP/1.0" : "HTTP/1.1")
                .append("\r\n");
        List<String> headers = new ArrayList<>();
        if (connect && !hostMismatch) {
            headers.add("Host: " + target.text());
        } else if (hostMismatch) {
            headers.add("Host: " + (r.nextBoolean() ? "evil.example" : "localhost:2"));
        } else if (target.hostHeader() != null) {
            headers.add("Host: " + target.hostHeader());
        }
        if (cred.header() != null) {
            headers.add("Proxy-Authorization: " + cred.header());
        }
        if (r.nextBoolean()) {
            headers.add("Accept: " + (r.nextBoolean() ? "text/html,application/xhtml+xml" : "*/*"));
        }
        if (r.nextInt(3) == 0) {
            headers.add("User-Agent: fuzz/" + r.nextInt(100));
        }
        if (r.nextInt(4) == 0) {
            headers.add("Connection: " + (r.nextBoolean() ? "close" : "keep-alive"));
        }
        if (r.nextInt(6) == 0) {
            headers.add("X-Dup: 1");
            headers.add("X-Dup: 2");
        }
        if (r.nextInt(8) == 0) {
            headers.add("Proxy-Connection: keep-alive");
        }
        if (!connect && r.nextInt(10) == 0) {
            headers.add("Upgrade: websocket");
            headers.add("Connection: Upgrade");
        }
        java.util.Collections.shuffle(headers, r);
        String body = "";
        if (!connect && (method.equals("POST") || method.equals("PUT") || r.nextInt(10) == 0)) {
            String content = printable(r, r.nextInt(300));
            if (http10 || r.nextBoolean()) { // chunked is HTTP/1.1 only (RFC 9112 section 7)
                headers.add("Content-Length: " + content.length());
                body = content;
            } else {
                headers.add("Transfer-Encoding: chunked");
                body = (content.isEmpty() ? "" : Integer.toHexString(content.length()) + "\r\n" + content + "\r\n")
                        + "0\r\n\r\n";
            }
        }
        for (String h : headers) {
            b.append(h).append("\r\n");
        }
        b.append("\r\n").append(body);
        if (r.nextInt(8) == 0) {
            b.append("GET http://localhost:5173/second HTTP/1.1\r\nProxy-Authorization: Basic ")
                    .append(b64(m.user() + ":" + m.password())).append("\r\n\r\n"); // never answered: first closes
        }
        if (r.nextInt(20) == 0) {
            b.insert(0, "\r\n"); // a leading empty line is tolerated (RFC 9112 section 2.2)
        }
        c.wire = b.toString().getBytes(StandardCharsets.UTF_8);
        c.head = method.equals("HEAD");
        c.note = method + " " + target.kind() + " " + auth + (hostMismatch ? " host-mismatch" : "");
        // The answer, in the order RequestGate decides.
        if (target.kind() == Target.MALFORMED) {
            expect(c, 400, "bad_request");
        } else if (!connect && target.kind() == Target.ORIGIN) {
            expect(c, 400, "not_a_proxy_request");
        } else if (cred.session() == 0) {
            expect(c, 407, "proxy_auth_required");
        } else if (target.kind() == Target.BAD || target.kind() == Target.UNSUPPORTED) {
            expect(c, 400, "bad_request");
        } else if (hostMismatch) {
            expect(c, 400, "bad_request");
        } else if (target.kind() == Target.GRANTED && cred.session() == 1
                || target.kind() == Target.GRANTED_OTHER_SESSION && cred.session() == 2) {
            expect(c, 502, "gateway_unreachable");
        } else {
            expect(c, 403, "not_granted");
        }
    }

    private static void expect(Case c, int status, String code) {
        c.status = status;
        c.code = code;
    }

    /** A request whose head the HTTP decoder must reject: answered 400 bad_request whatever else it says. */
    void syntax(Case c, Random r) {
        c.kind = "syntax";
        credential(r, c, Auth.S1);
        String auth = "Proxy-Authorization: Basic " + b64(m.user() + ":" + m.password()) + "\r\n";
        String target = r.nextBoolean() ? "CONNECT localhost:5173 HTTP/1.1\r\nHost: localhost:5173\r\n"
                : "GET http://localhost:5173/ HTTP/1.1\r\n";
        String req;
        switch (r.nextInt(8)) {
            case 0 -> {
                req = target + auth + "X-Big: " + "a".repeat(17 * 1024 + r.nextInt(8000)) + "\r\n\r\n";
                c.note = "header section over maxRequestHead";
            }
            case 1 -> {
                req = "GET http://localhost:5173/" + "a".repeat(8200 + r.nextInt(4000)) + " HTTP/1.1\r\n" + auth
                        + "\r\n";
                c.note = "request line over 8192";
            }
            case 2 -> {
                StringBuilder many = new StringBuilder();
                int n = 2000 + r.nextInt(1000);
                for (int i = 0; i < n; i++) {
                    many.append("X-H").append(i).append(": v\r\n");
                }
                req = target + auth + many + "\r\n";
                c.note = "too many header lines";
            }
            case 3 -> {
                req = target + "Bad Header: x\r\n" + auth + "\r\n";
                c.note = "space in a header name";
            }
            case 4 -> {
                req = target + auth + "Content-Length: 12abc\r\n\r\n";
                c.note = "non-numeric Content-Length";
            }
            case 5 -> {
                req = target + auth + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!";
                c.note = "conflicting Content-Length";
            }
            case 6 -> {
                req = target + auth + "Content-Length: -1\r\n\r\n";
                c.note = "negative Content-Length";
            }
            default -> {
                req = target + "NoColonHere\r\n" + auth + "\r\n";
                c.note = "header line without a colon";
            }
        }
        c.wire = req.getBytes(StandardCharsets.ISO_8859_1);
        expect(c, 400, "bad_request");
    }

    /**
     * RFC 9112 framing shapes (issue 16, item 7) on otherwise valid proxy requests for a granted target: two Host
     * fields, Content-Length with Transfer-Encoding, Transfer-Encoding in HTTP/1.0 or without chunked last, bad
     * header names, a fold with nothing to continue (all 400 on the head); a chunk size that overflows or a chunk
     * not ended by CRLF (400 when it arrives with the head); pipelined requests and a valid fold (the first request's
     * own answer, 502 here, then the close).
     */
    void framing(Case c, Random r) {
        c.kind = "framing";
        credential(r, c, Auth.S1);
        String auth = "Proxy-Authorization: Basic " + b64(m.user() + ":" + m.password()) + "\r\n";
        boolean connect = r.nextInt(4) == 0;
        String line = connect ? "CONNECT localhost:5173 HTTP/1.1\r\n" : (r.nextBoolean() ? "POST" : "GET")
                + " http://localhost:5173/f HTTP/1.1\r\n";
        String req;
        switch (r.nextInt(10)) {
            case 0 -> {
                String second = r.nextBoolean() ? "localhost:5173" : "127.evil.example:5173";
                req = line + "Host: localhost:5173\r\n" + auth + "Host: " + second + "\r\n\r\n";
                expect(c, 400, "bad_request");
                c.note = "two Host headers";
            }
            case 1 -> {
                String cl = "Content-Length: " + r.nextInt(10) + "\r\n";
                String te = "Transfer-Encoding: chunked\r\n";
                req = line + auth + (r.nextBoolean() ? cl + te : te + cl) + "\r\n5\r\nabcde\r\n0\r\n\r\n";
                expect(c, 400, "bad_request");
                c.note = "Content-Length with Transfer-Encoding";
            }
            case 2 -> {
                req = line.replace("HTTP/1.1", "HTTP/1.0") + auth + "Transfer-Encoding: chunked\r\n\r\n"
                        + "3\r\nabc\r\n0\r\n\r\n";
                expect(c, 400, "bad_request");
                c.note = "Transfer-Encoding in HTTP/1.0";
            }
            case 3 -> {
                String[] codings = {"gzip", "chunked, gzip", "identity", "chunked\r\nTransfer-Encoding: chunked",
                        "x-custom"};
                req = line + auth + "Transfer-Encoding: " + codings[r.nextInt(codings.length)] + "\r\n\r\nabc";
                expect(c, 400, "bad_request");
                c.note = "Transfer-Encoding without chunked last (or twice)";
            }
            case 4 -> {
                String[] names = {"Bad Name: x", "Transfer-Encoding : chunked", "X(y: z", ": empty", "X\u00ff: y",
                        "Content-Length\t: 0"};
                req = line + auth + names[r.nextInt(names.length)] + "\r\n\r\n";
                expect(c, 400, "bad_request");
                c.note = "invalid header name";
            }
            case 5 -> {
                req = line + " Folded: x\r\n" + auth + "\r\n";
                expect(c, 400, "bad_request");
                c.note = "fold with nothing to continue";
            }
            case 6, 7 -> {
                String[] sizes = {"ffffffffffffffffff", "100000000", "7fffffffffffffff", "-5", "5 5", "0x5", "+5",
                        "5;x=\"unterminated"};
                String size = sizes[r.nextInt(sizes.length)];
                boolean badEnd = r.nextBoolean();
                req = line.replace("GET", "POST").replace("CONNECT", "POST").replace("localhost:5173 ",
                        "http://localhost:5173/f ") + auth + "Transfer-Encoding: chunked\r\n\r\n"
                        + (badEnd ? "5\r\nabcdeXX\r\n" : size + "\r\nabcde\r\n") + "0\r\n\r\n";
                expect(c, 400, "bad_request");
                c.bodyFraming = true;
                c.note = badEnd ? "chunk not ended by CRLF" : "chunk size " + size;
            }
            case 8 -> {
                StringBuilder b = new StringBuilder();
                int n = 2 + r.nextInt(3);
                for (int i = 0; i < n; i++) {
                    b.append("GET http://localhost:5173/p").append(i).append(" HTTP/1.1\r\n").append(auth)
                            .append("\r\n");
                }
                req = b.toString();
                expect(c, 502, "gateway_unreachable"); // the first one's answer; then the close
                c.note = n + " pipelined requests";
            }
            default -> {
                req = line + "X-Folded: a\r\n b\r\n\tc\r\n" + auth + "\r\n";
                expect(c, 502, "gateway_unreachable"); // joined with SP (RFC 9112 section 5.2), then proxied
                c.note = "obs-fold after a field";
            }
        }
        c.wire = req.getBytes(StandardCharsets.ISO_8859_1);
    }

    /** A proxy request mutated at the byte level, or with odd but arguable syntax: only the general properties. */
    void mutated(Case c, Random r) {
        Case base = new Case(c.index, c.seed);
        proxy(base, r);
        c.secrets.addAll(base.secrets);
        byte[] w = base.wire;
        String s = new String(w, StandardCharsets.ISO_8859_1);
        int k = r.nextInt(16);
        switch (k) {
            case 0 -> {
                w = flipBits(r, w, 1 + r.nextInt(6));
                c.note = "bit flips";
            }
            case 1 -> {
                w = java.util.Arrays.copyOf(w, r.nextInt(w.length + 1));
                c.note = "truncated";
            }
            case 2 -> {
                int from = r.nextInt(w.length);
                int to = Math.min(w.length, from + 1 + r.nextInt(80));
                w = splice(w, to, java.util.Arrays.copyOfRange(w, from, to), 0);
                c.note = "range duplicated";
            }
            case 3 -> {
                int from = r.nextInt(w.length);
                w = splice(w, from, new byte[0], Math.min(w.length - from, 1 + r.nextInt(40)));
                c.note = "range deleted";
            }
            case 4 -> {
                w = splice(w, r.nextInt(w.length + 1), randomBytes(r, 1 + r.nextInt(30)), 0);
                c.note = "garbage inserted";
            }
            case 5 -> {
                w = s.replace("\r\n", "\n").getBytes(StandardCharsets.ISO_8859_1);
                c.note = "bare LF line ends";
            }
            case 6 -> {
                int at = s.indexOf("\r\n") + 2;
                w = splice(w, at, "X-Folded: a\r\n  b\r\n\tc\r\n".getBytes(StandardCharsets.ISO_8859_1), 0);
                c.note = "obs-fold";
            }
            case 7 -> {
                w = splice(w, r.nextInt(Math.max(1, s.indexOf("\r\n\r\n")) + 1), new byte[] {0}, 0);
                c.note = "NUL in the head";
            }
            case 8 -> {
                int at = s.indexOf("\r\n") + 2;
                w = splice(w, at, ("Content-Length: 3\r\nTransfer-Encoding: chunked\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1), 0);
                c.note = "Content-Length with Transfer-Encoding";
            }
            case 9 -> {
                int at = s.indexOf("\r\n") + 2;
                String[] sizes = {"zz", "-1", "ffffffffffffffffff", "7fffffff", "1;ext=\"x", "", " 5", "5 5"};
                String chunks = "Transfer-Encoding: chunked\r\n";
                int end = s.indexOf("\r\n\r\n");
                String head = s.substring(0, end + 4);
                String bad = sizes[r.nextInt(sizes.length)] + "\r\nabcde\r\n0\r\n\r\n";
                w = (head.substring(0, at) + chunks + head.substring(at) + bad).getBytes(StandardCharsets.ISO_8859_1);
                c.note = "chunk size " + bad.substring(0, bad.indexOf('\r'));
            }
            case 10 -> {
                int at = s.indexOf("\r\n") + 2;
                w = splice(w, at, ("Proxy-Authorization: Basic " + b64("x:y") + "\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1), 0);
                c.note = "second Proxy-Authorization";
            }
            case 11 -> {
                // A secret in the request-target itself (user-info, or a query like an OAuth code), with or
                // without a valid proxy credential: it must not come back, nor reach a log line.
                String url = r.nextBoolean() ? "http://" + m.user() + ":" + m.password() + "@localhost:5173/"
                        : (r.nextBoolean() ? "https" : "ftp") + "://localhost:5173/cb?code=" + m.password();
                w = ("GET " + url + " HTTP/1.1\r\n" + (r.nextBoolean() ? "Proxy-Authorization: Basic "
                        + b64(m.user() + ":" + m.password()) + "\r\n" : "") + "\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1);
                c.note = "secret in the request-target";
            }
            case 12 -> {
                w = s.replaceFirst("HTTP/1\\.[01]", r.nextBoolean() ? "HTTP/2.0" : "HTTP/1.x")
                        .getBytes(StandardCharsets.ISO_8859_1);
                c.note = "odd version";
            }
            case 13 -> {
                w = s.replaceFirst(" ", r.nextBoolean() ? "\t" : "  ").getBytes(StandardCharsets.ISO_8859_1);
                c.note = "odd whitespace in the request line";
            }
            case 14 -> {
                w = s.replaceFirst("^[A-Z]+", java.util.regex.Matcher.quoteReplacement(r.nextBoolean() ? "get"
                        : printable(r, 1 + r.nextInt(20)))).getBytes(StandardCharsets.ISO_8859_1);
                c.note = "odd method";
            }
            default -> {
                w = s.replace("\r\n\r\n", "\r\nX-Utf8: \u00e9\u00ff\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1);
                c.note = "obs-text in a header value";
            }
        }
        c.kind = "mutated";
        c.wire = w;
        c.head = base.head;
    }

    /** Random bytes, random tokens, or a request head dripped in tiny reads. */
    void random(Case c, Random r) {
        c.kind = "random";
        credential(r, c, Auth.NONE);
        switch (r.nextInt(4)) {
            case 0 -> {
                c.wire = randomBytes(r, 1 + r.nextInt(2000));
                c.note = "random bytes";
            }
            case 1 -> {
                StringBuilder b = new StringBuilder();
                int n = 1 + r.nextInt(30);
                String[] tokens = {"GET", "CONNECT", " ", "\r\n", ":", "http://", "localhost", "5173", "/", "HTTP/1.1",
                        "Host", "Proxy-Authorization", "Basic", "\r\n\r\n", "[", "]", "%", "\t", "\n", "*"};
                for (int i = 0; i < n; i++) {
                    b.append(tokens[r.nextInt(tokens.length)]);
                }
                c.wire = b.toString().getBytes(StandardCharsets.ISO_8859_1);
                c.note = "token soup";
            }
            case 2 -> {
                Case base = new Case(c.index, c.seed);
                proxy(base, r);
                c.secrets.addAll(base.secrets);
                c.wire = base.wire;
                c.status = base.status;
                c.code = base.code;
                c.head = base.head;
                int step = 1 + r.nextInt(3);
                int n = Math.min(300, (c.wire.length - 1) / step);
                c.cuts = new int[Math.max(0, n)];
                for (int i = 0; i < c.cuts.length; i++) {
                    c.cuts[i] = (i + 1) * step;
                }
                c.note = "dripped " + step + " byte(s) per read, " + base.note;
            }
            default -> {
                c.wire = ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + new String(randomBytes(r, r.nextInt(50)),
                        StandardCharsets.ISO_8859_1)).getBytes(StandardCharsets.ISO_8859_1);
                c.note = "HTTP/2 preface";
            }
        }
    }

    // ================================================================ bytes

    static int[] cutPoints(Random r, int length, int parts) {
        if (length < 2 || parts < 2) {
            return new int[0];
        }
        int n = Math.min(parts - 1, length - 1);
        TreeSet<Integer> set = new TreeSet<>();
        while (set.size() < n) {
            set.add(1 + r.nextInt(length - 1));
        }
        return set.stream().mapToInt(Integer::intValue).toArray();
    }

    static String printable(Random r, int n) {
        char[] c = new char[n];
        for (int i = 0; i < n; i++) {
            c[i] = (char) (0x21 + r.nextInt(0x7e - 0x21));
        }
        return new String(c);
    }

    static byte[] randomBytes(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }

    static byte[] flipBits(Random r, byte[] in, int flips) {
        byte[] out = in.clone();
        for (int i = 0; i < flips && out.length > 0; i++) {
            int at = r.nextInt(out.length);
            out[at] ^= (byte) (1 << r.nextInt(8));
        }
        return out;
    }

    static byte[] splice(byte[] in, int at, byte[] insert, int delete) {
        ByteArrayOutputStream o = new ByteArrayOutputStream(in.length + insert.length);
        o.write(in, 0, at);
        o.write(insert, 0, insert.length);
        o.write(in, at + delete, in.length - at - delete);
        return o.toByteArray();
    }
}
