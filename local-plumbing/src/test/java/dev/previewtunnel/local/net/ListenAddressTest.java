package dev.previewtunnel.local.net;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ListenAddressTest {

    @Test
    void parsesHostPortWithPortZeroAndBracketedIpv6() throws Exception {
        assertEquals(new ListenAddress("127.0.0.1", 0), ListenAddress.parse("127.0.0.1:0"));
        assertEquals(new ListenAddress("::1", 7443), ListenAddress.parse("[::1]:7443"));
        assertEquals(new ListenAddress("localhost", 65535), ListenAddress.parse("localhost:65535"));

        InetSocketAddress v4 = ListenAddress.parse("127.0.0.1:0").resolve();
        assertTrue(v4.getAddress() instanceof Inet4Address);
        assertEquals(0, v4.getPort());
        InetSocketAddress v6 = ListenAddress.parse("[::1]:0").resolve();
        assertTrue(v6.getAddress() instanceof Inet6Address);
        assertTrue(v6.getAddress().isLoopbackAddress());
        assertEquals("[::1]:0", ListenAddress.parse("[::1]:0").toString());
    }

    @Test
    void literalsAreNeverLookedUp() {
        // An unresolved InetSocketAddress would have no address; literals are built from their bytes.
        assertTrue(ListenAddress.parse("10.1.2.3:1").isLiteral());
        assertTrue(ListenAddress.parse("[fd12::1]:1").isLiteral());
        assertFalse(ListenAddress.parse("localhost:1").isLiteral());
        assertFalse(ListenAddress.parse("1.2.3:1").isLiteral(), "only the dotted quad is a literal here");
        assertFalse(ListenAddress.parse("256.1.1.1:1").isLiteral());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "nonsense|missing :PORT (IPv6 needs brackets)",
            "::1:80|missing :PORT (IPv6 needs brackets)",
            ":80|missing :PORT (IPv6 needs brackets)",
            "127.0.0.1:70000|port must be 0..65535",
            "127.0.0.1:|port must be 0..65535",
            "127.0.0.1:-1|port must be 0..65535",
            "127.0.0.1:+80|port must be 0..65535",
            "[::1|malformed IPv6 address",
            "[::1]|malformed IPv6 address",
            "[::1]x80|malformed IPv6 address",
            "[zz::1]:80|malformed IPv6 address",
            "[1.2.3.4]:80|malformed IPv6 address",
            "[example.com]:80|malformed IPv6 address",
            "a b:80|invalid host",
            "a/b:80|invalid host",
    })
    void malformedValuesNameTheProblem(String text, String problem) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ListenAddress.parse(text));
        assertEquals(problem, e.getMessage());
    }

    @Test
    void emptyAndOverlongAreRefused() {
        assertEquals("empty or too long",
                assertThrows(IllegalArgumentException.class, () -> ListenAddress.parse("")).getMessage());
        assertEquals("empty or too long", assertThrows(IllegalArgumentException.class,
                () -> ListenAddress.parse("a".repeat(300) + ":1")).getMessage());
        assertThrows(IllegalArgumentException.class, () -> ListenAddress.parse(null));
    }

    @ParameterizedTest
    @CsvSource({
            "::1, [::1]:80",
            "::, [::]:80",
            "0:0:0:0:0:0:0:1, [::1]:80",
            "2001:DB8:0:0:1:0:0:1, [2001:db8::1:0:0:1]:80",
            "1:0:0:1:0:0:0:1, [1:0:0:1::1]:80",
            "1:2:3:4:5:6:7:0, [1:2:3:4:5:6:7:0]:80",
            "fe80:0:0:0:0:0:0:1, [fe80::1]:80",
            "::ffff:127.0.0.1, 127.0.0.1:80",
            "127.0.0.1, 127.0.0.1:80",
    })
    void formatsRfc5952(String address, String expected) throws Exception {
        assertEquals(expected, ListenAddress.format(new InetSocketAddress(InetAddress.getByName(address), 80)));
    }

    @Test
    void formatsAnUnresolvedAddressByItsName() {
        assertEquals("nowhere.invalid:1",
                ListenAddress.format(InetSocketAddress.createUnresolved("nowhere.invalid", 1)));
    }
}
