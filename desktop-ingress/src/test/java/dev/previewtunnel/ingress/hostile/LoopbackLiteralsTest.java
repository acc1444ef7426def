package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.testing.NettyLeakGuard;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 6: only the literal names docs/desktop-ingress.md promises ({@code localhost}, {@code 127.0.0.1},
 * {@code [::1]}, and virtual hosts) reach a grant by loopback passthrough. A session holds a grant for
 * {@code 127.0.0.1:P}; every other spelling, GET and CONNECT, is refused (400 or 403) and the target accepts no
 * connection; {@code localhost:P} then reaches it, and is the only connection it ever accepted.
 */
class LoopbackLiteralsTest {
    FramingStack stack;

    @BeforeEach
    void start(@TempDir Path dir) throws Exception {
        stack = new FramingStack(dir);
    }

    @AfterEach
    void stop() throws Exception {
        stack.close();
        List<String> leaks = NettyLeakGuard.collectLeaks();
        assertTrue(leaks.isEmpty(), String.join("\n\n", leaks));
    }

    /** Hosts that are not one of the promised literals, each with the granted port unless it says otherwise. */
    static List<String> hostileAuthorities(int p) {
        return List.of("127.evil.example:" + p, "127.0.0.1.evil.example:" + p, "localhost.evil.example:" + p,
                "127.1:" + p, "127.0.1:" + p, "0x7f.1:" + p, "0x7f000001:" + p, "2130706433:" + p,
                "0177.0.0.1:" + p, "127.000.000.001:" + p, "127.0.0.2:" + p, "127.0.0.1.:" + p, "localhost.:" + p,
                "[::ffff:127.0.0.1]:" + p, "[0:0:0:0:0:0:0:1]:" + p, "[::ffff:7f00:1]:" + p,
                "evil.localhost:" + p, "preview.localhost:" + p, "localhost:0" + p, "localhost:+" + p,
                "localhost:" + p + "0", "%6c%6f%63%61%6c%68%6f%73%74:" + p);
    }

    @Test
    void absoluteFormRequestsForOtherSpellingsNeverReachTheGrant() throws Exception {
        int p = stack.port();
        List<String> wrong = new ArrayList<>();
        List<String> urls = new ArrayList<>();
        for (String a : hostileAuthorities(p)) {
            urls.add("http://" + a + "/");
        }
        urls.add("http://evil@localhost:" + p + "/"); // user-info
        urls.add("http://localhost:" + p + "@127.evil.example/");
        urls.add("http://[::1%25lo]:" + p + "/"); // a zone
        for (String url : urls) {
            var r = stack.exchange("GET " + url + " HTTP/1.1\r\n" + stack.auth() + "\r\n", 0).first();
            if (r.status() != 400 && r.status() != 403) {
                wrong.add(url + " -> " + r.status() + " " + r.code());
            }
        }
        // A Host header that names another authority than the request line.
        for (String host : List.of("127.evil.example:" + p, "localhost:" + p + "\r\nHost: 127.evil.example:" + p,
                "localhost:0" + p, "evil@localhost:" + p)) {
            var r = stack.exchange("GET http://localhost:" + p + "/ HTTP/1.1\r\nHost: " + host + "\r\n"
                    + stack.auth() + "\r\n", 0).first();
            if (r.status() != 400) {
                wrong.add("Host " + host.replace("\r\n", " | ") + " -> " + r.status() + " " + r.code());
            }
        }
        assertControlOnlyReachesTarget(wrong, "GET http://LocalHost:" + p + "/ok HTTP/1.1\r\n" + stack.auth()
                + "\r\n");
    }

    @Test
    void connectForOtherSpellingsNeverReachesTheGrant() throws Exception {
        int p = stack.port();
        List<String> wrong = new ArrayList<>();
        for (String a : hostileAuthorities(p)) {
            var r = stack.exchange("CONNECT " + a + " HTTP/1.1\r\nHost: " + a + "\r\n" + stack.auth() + "\r\n", 0)
                    .first();
            if (r.status() != 400 && r.status() != 403) {
                wrong.add("CONNECT " + a + " -> " + r.status() + " " + r.code());
            }
        }
        // The granted authority with a Host header that disagrees with it (or two of them).
        for (String host : List.of("127.evil.example:" + p, "evil.example", "localhost:" + p + "\r\nHost: localhost:"
                + p)) {
            var r = stack.exchange("CONNECT localhost:" + p + " HTTP/1.1\r\nHost: " + host + "\r\n" + stack.auth()
                    + "\r\n", 0).first();
            if (r.status() != 400) {
                wrong.add("CONNECT with Host " + host.replace("\r\n", " | ") + " -> " + r.status() + " " + r.code());
            }
        }
        assertControlOnlyReachesTarget(wrong, "CONNECT localhost:" + p + " HTTP/1.1\r\nHost: localhost:" + p + "\r\n"
                + stack.auth() + "\r\n");
    }

    /** The control request reaches the target; it is the only connection the target ever accepted. */
    private void assertControlOnlyReachesTarget(List<String> wrong, String control) throws Exception {
        int before = stack.accepted.get();
        var answer = control.startsWith("CONNECT") ? stack.tunnel(control, "GET /ok HTTP/1.1\r\nHost: localhost:"
                + stack.port() + "\r\n\r\n") : stack.exchange(control, 1);
        assertTrue(wrong.isEmpty() && before == 0, "reached the grant (accepted " + before + "): " + wrong);
        var last = answer.responses().get(answer.responses().size() - 1);
        assertEquals(200, last.status(), answer.toString());
        assertEquals("/ok", last.body());
        assertEquals(1, stack.accepted.get(), "the control is the one connection the target accepted");
        assertEquals(List.of("GET /ok 0"), stack.requests);
    }
}
