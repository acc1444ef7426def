package dev.previewtunnel.local.net;

import io.netty.util.NetUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.Inet4Address;
import java.net.InetAddress;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every range the desktop's direct egress must never reach, and the gateway's loopback-only policy builds on, at
 * its edges: the first and last address inside, and the neighbours just outside that are public.
 */
class AddressClassTest {

    /** A literal to an address from its raw bytes, so the JDK's own IPv4-mapped shortcut is not what is tested. */
    private static InetAddress literal(String ip) throws Exception {
        byte[] bytes = NetUtil.createByteArrayFromIpAddressString(ip);
        assertNotNull(bytes, ip + " is an IP literal");
        return InetAddress.getByAddress(bytes);
    }

    @ParameterizedTest(name = "{0} is {1}")
    @CsvSource({
            // loopback, both families, the whole 127/8
            "127.0.0.1, LOOPBACK", "127.0.0.0, LOOPBACK", "127.255.255.255, LOOPBACK", "127.1.2.3, LOOPBACK",
            "::1, LOOPBACK",
            // IPv4-mapped and IPv4-compatible IPv6 spellings of loopback
            "::ffff:127.0.0.1, LOOPBACK", "::ffff:7f00:1, LOOPBACK", "::ffff:127.9.9.9, LOOPBACK",
            "::127.0.0.1, LOOPBACK",
            // unspecified: on Linux a connect to them reaches loopback
            "0.0.0.0, UNSPECIFIED", "::, UNSPECIFIED", "::ffff:0.0.0.0, UNSPECIFIED",
            // link-local, including the cloud metadata address and its IPv6 twin
            "169.254.0.0, LINK_LOCAL", "169.254.169.254, LINK_LOCAL", "169.254.255.255, LINK_LOCAL",
            "fe80::1, LINK_LOCAL", "febf:ffff::1, LINK_LOCAL", "::ffff:169.254.169.254, LINK_LOCAL",
            "fd00:ec2::254, LINK_LOCAL",
            // RFC 1918 at its edges
            "10.0.0.0, PRIVATE", "10.255.255.255, PRIVATE",
            "172.16.0.0, PRIVATE", "172.31.255.255, PRIVATE",
            "192.168.0.0, PRIVATE", "192.168.255.255, PRIVATE",
            "::ffff:10.1.2.3, PRIVATE", "::ffff:172.16.0.1, PRIVATE", "::ffff:192.168.1.1, PRIVATE",
            // IPv6 unique-local fc00::/7 and deprecated site-local fec0::/10
            "fc00::1, PRIVATE", "fdff:ffff::1, PRIVATE", "fec0::1, PRIVATE",
            // carrier-grade NAT 100.64/10
            "100.64.0.0, PRIVATE", "100.127.255.255, PRIVATE", "::ffff:100.64.0.1, PRIVATE",
            // reserved 0/8 (not 0.0.0.0 itself) and 240/4 with broadcast
            "0.1.2.3, PRIVATE", "240.0.0.1, PRIVATE", "255.255.255.255, PRIVATE",
            // NAT64 (embedded IPv4 in hex: 7f00:1 is 127.0.0.1): the translator reaches the embedded address
            "64:ff9b::7f00:1, PRIVATE", "64:ff9b::a00:1, PRIVATE", "64:ff9b::c0a8:101, PRIVATE",
            "64:ff9b::a9fe:a9fe, PRIVATE", "64:ff9b:1::808:808, PRIVATE",
            // multicast
            "224.0.0.1, MULTICAST", "239.255.255.250, MULTICAST", "ff02::1, MULTICAST", "ff05::fb, MULTICAST",
            "::ffff:224.0.0.251, MULTICAST",
            // public neighbours just outside each range
            "8.8.8.8, PUBLIC", "1.1.1.1, PUBLIC", "9.255.255.255, PUBLIC", "11.0.0.0, PUBLIC",
            "126.255.255.255, PUBLIC", "128.0.0.0, PUBLIC", "169.253.255.255, PUBLIC", "169.255.0.0, PUBLIC",
            "172.15.255.255, PUBLIC", "172.32.0.0, PUBLIC", "192.167.255.255, PUBLIC", "192.169.0.0, PUBLIC",
            "100.63.255.255, PUBLIC", "100.128.0.0, PUBLIC", "223.255.255.255, PUBLIC",
            "2606:4700:4700::1111, PUBLIC", "::ffff:8.8.8.8, PUBLIC",
            "64:ff9b::808:808, PUBLIC"
    })
    void classifies(String ip, AddressClass expected) throws Exception {
        assertEquals(expected, AddressClass.of(literal(ip)), ip);
    }

    @Test
    void unwrapTurnsMappedAndCompatibleFormsIntoTheIpv4TheyCarry() throws Exception {
        InetAddress mapped = AddressClass.unwrap(NetUtil.createByteArrayFromIpAddressString("::ffff:127.0.0.1"));
        assertInstanceOf(Inet4Address.class, mapped);
        assertArrayEquals(new byte[] {127, 0, 0, 1}, mapped.getAddress());
        InetAddress compatible = AddressClass.unwrap(NetUtil.createByteArrayFromIpAddressString("::10.0.0.1"));
        assertArrayEquals(new byte[] {10, 0, 0, 1}, compatible.getAddress());
        // :: and ::1 are IPv6 themselves, not the IPv4 0.0.0.0 and 0.0.0.1.
        assertEquals(16, AddressClass.unwrap(NetUtil.createByteArrayFromIpAddressString("::")).getAddress().length);
        assertEquals(16, AddressClass.unwrap(NetUtil.createByteArrayFromIpAddressString("::1")).getAddress().length);
        // NAT64 is not unwrapped: the gateway must never take 64:ff9b::7f00:1 for its own loopback.
        assertEquals(16, AddressClass.unwrap(NetUtil.createByteArrayFromIpAddressString("64:ff9b::7f00:1"))
                .getAddress().length);
    }

    @ParameterizedTest
    @ValueSource(strings = {"2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.1", "127.0.0.1.", "", "1..1"})
    void numericSpellingsAreRecognised(String host) {
        assertTrue(AddressClass.looksLikeNumericSpelling(host), host);
    }

    @ParameterizedTest
    @ValueSource(strings = {"example.com", "localhost", "1e100.net", "0x7f.example", "a.1", "xn--80ak6aa92e.com"})
    void namesAreNotNumericSpellings(String host) {
        assertFalse(AddressClass.looksLikeNumericSpelling(host), host);
    }
}
