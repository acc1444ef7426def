package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.wire.Authority;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** The strict reading of request targets and Host headers (issue 16, item 6), without a Channel. */
class RequestTargetTest {

    @Test
    void canonicalTargetsAreRead() throws Exception {
        assertEquals(new Authority("localhost", 5173), RequestTarget.connect("LocalHost:5173"));
        assertEquals(new Authority("::1", 5173), RequestTarget.connect("[::1]:5173"));
        assertEquals(new Authority("127.evil.example", 443), RequestTarget.connect("127.evil.example:443"));
        RequestTarget.Absolute a = RequestTarget.absolute("http://127.0.0.1:8080/a/b?c=d#frag");
        assertEquals(new Authority("127.0.0.1", 8080), a.authority());
        assertEquals("/a/b?c=d", a.originForm());
        assertEquals(new Authority("localhost", 80), RequestTarget.absolute("HTTP://localhost").authority());
        assertEquals("/", RequestTarget.absolute("http://localhost").originForm());
    }

    @ParameterizedTest
    @ValueSource(strings = {"localhost", "localhost:", ":5173", "localhost:05173", "localhost:+5173",
            "localhost:-1", "localhost:0", "localhost:65536", "localhost:5173:1", "[::1]", "[::1", "[zz]:5173",
            "[::1%lo]:5173", "[::1]x:5173", "%6c%6f:5173", "user@localhost:5173", "a..b:5173", ".a:5173",
            ".:5173", "a b:5173", "localhost:5173/x", "localhost:0x50", "localhost:\u0665\u0661\u0667\u0663",
            "localhost:99999", "localhost:123456", "localhost:6553\u0665"})
    void connectTargetsThatAreNotOneCanonicalAuthorityAreRefused(String target) {
        assertThrows(IllegalArgumentException.class, () -> RequestTarget.connect(target));
    }

    @ParameterizedTest
    @ValueSource(strings = {"http://localhost:05173/", "http://localhost:+1/", "http://%6c%6f:5173/",
            "http://[::1%25lo]:5173/", "http://a..b/", "http://localhost:5173:1/", "http://[::1/"})
    void absoluteTargetsThatAreNotOneCanonicalAuthorityAreRefused(String target) {
        assertThrows(IllegalArgumentException.class, () -> RequestTarget.absolute(target));
    }

    @ParameterizedTest
    @ValueSource(strings = {"https://localhost:5173/", "ftp://localhost/", "http:///x", "http://user:pw@localhost/",
            "http://localhost:5173@127.evil.example/", "http://@localhost/", "mailto:x@y", "/relative"})
    void otherSchemesAndUserInfoAreUnsupported(String target) {
        RequestTarget.UnsupportedException e = assertThrows(RequestTarget.UnsupportedException.class,
                () -> RequestTarget.absolute(target));
        assertFalse(e.safeTarget().contains("pw"), "never the user-info");
    }

    @Test
    void hostMustBeOneValueNamingTheSameAuthority() {
        Authority a = new Authority("localhost", 5173);
        assertTrue(RequestTarget.hostMatches(List.of("localhost:5173"), a, 80));
        assertTrue(RequestTarget.hostMatches(List.of("LOCALHOST:5173"), a, 80));
        assertTrue(RequestTarget.hostMatches(List.of("localhost"), a, 5173)); // CONNECT: no port = the target's
        assertFalse(RequestTarget.hostMatches(List.of("localhost"), a, 80));
        assertFalse(RequestTarget.hostMatches(List.of("localhost:5173", "localhost:5173"), a, 80));
        assertFalse(RequestTarget.hostMatches(List.of("localhost:05173"), a, 80));
        assertFalse(RequestTarget.hostMatches(List.of("127.evil.example:5173"), a, 80));
        assertFalse(RequestTarget.hostMatches(List.of("u@localhost:5173"), a, 80));
        assertFalse(RequestTarget.hostMatches(List.of(""), a, 80));
    }

    @Test
    void everyPortReadsAsItselfInCanonicalDecimalOnly() throws Exception {
        for (int port = 1; port <= 65_535; port++) {
            assertEquals(port, RequestTarget.connect("localhost:" + port).port());
            assertEquals(port, RequestTarget.absolute("http://localhost:" + port + "/").authority().port());
        }
    }

    /** Property: whatever the bytes, a target is either refused with IllegalArgumentException or plain text. */
    @Test
    void randomTargetsAreRefusedOrPlain() {
        Random r = new Random(0x6A6A_7L);
        String alphabet = "lohcast127.0:[]%@/x-_9fF ";
        for (int i = 0; i < 200_000; i++) {
            StringBuilder b = new StringBuilder();
            int n = 1 + r.nextInt(24);
            for (int k = 0; k < n; k++) {
                b.append(r.nextInt(20) == 0 ? (char) r.nextInt(256) : alphabet.charAt(r.nextInt(alphabet.length())));
            }
            String text = b.toString();
            Authority a;
            try {
                a = RequestTarget.connect(text);
            } catch (IllegalArgumentException refused) {
                continue;
            } catch (RuntimeException e) {
                fail("unexpected " + e + " for " + text);
                return;
            }
            assertTrue(a.host().matches("[a-z0-9._-]+") || (a.isIpv6Literal() && a.host().matches("[0-9a-f:.]+")),
                    text + " -> " + a);
            assertTrue(text.equalsIgnoreCase(a.toString()) || text.startsWith("["), text + " -> " + a);
        }
    }
}
