package dev.previewtunnel.mux.wire;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** {@link Authority#parse}: the {@code :authority} of every stream a peer opens, read from the network. */
class AuthorityTest {

    @Test
    void hostAndPortAreRead() {
        assertEquals(new Authority("localhost", 5173), Authority.parse("LocalHost:5173"));
        assertEquals(new Authority("::1", 8080), Authority.parse("[::1]:8080"));
        assertEquals(new Authority("127.0.0.1", 65_535), Authority.parse("127.0.0.1:65535"));
        assertEquals(new Authority("a_b-c.d", 1), Authority.parse("a_b-c.d:1"));
        assertEquals("[::1]:8080", Authority.parse("[::1]:8080").toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "localhost", "localhost:", ":80", "localhost:0", "localhost:65536", "localhost:123456",
            "localhost:+80", "localhost:-1", "localhost:8O", "localhost:\u0668\u0660", "a:b:80", "[::1]", "[::1]80",
            "[zz]:80", "u@localhost:80", "local host:80", "localhost/x:80", "[::1:80", "[::1%lo]:80", "[::%]:1",
            "[fe80::1%eth0]:80", "[::1%\n]:80"})
    void anythingElseIsRefused(String text) {
        assertThrows(IllegalArgumentException.class, () -> Authority.parse(text));
    }

    @Test
    void decimalDigitsTakesOneToFiveAsciiDigitsOnly() {
        assertEquals(0, Authority.decimalDigits("0"));
        assertEquals(80, Authority.decimalDigits("080"));
        assertEquals(99_999, Authority.decimalDigits("99999"));
        for (String text : new String[] {"", "123456", "+1", "-1", " 1", "1 ", "1a", "\u0661", "\uff11"}) {
            assertEquals(-1, Authority.decimalDigits(text), text);
        }
        for (int n = 0; n <= 99_999; n++) {
            assertEquals(n, Authority.decimalDigits(Integer.toString(n)));
        }
    }

    /** Property: whatever the text, it is refused with IllegalArgumentException or read as itself. */
    @Test
    void randomTextIsRefusedOrReadAsItself() {
        Random r = new Random(0xA07E_1L);
        String alphabet = "lochst127.0:[]%@/x-_9fF8+ ";
        int read = 0;
        for (int i = 0; i < 200_000; i++) {
            StringBuilder b = new StringBuilder();
            int n = 1 + r.nextInt(20);
            for (int k = 0; k < n; k++) {
                b.append(r.nextInt(20) == 0 ? (char) r.nextInt(0x3000) : alphabet.charAt(r.nextInt(alphabet.length())));
            }
            String text = b.toString();
            Authority a;
            try {
                a = Authority.parse(text);
            } catch (IllegalArgumentException refused) {
                continue;
            } catch (RuntimeException e) {
                fail("unexpected " + e + " for " + text);
                return;
            }
            read++;
            assertTrue(a.port() >= 1 && a.port() <= 65_535, text);
            assertTrue(a.host().matches("[a-z0-9._-]+") || (a.isIpv6Literal() && a.host().matches("[0-9a-f:.]+")),
                    text + " -> " + a);
            assertEquals(a, Authority.parse(a.toString()), text);
        }
        assertTrue(read > 100, "the generator reaches valid authorities too: " + read);
    }
}
