package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.local.net.ListenAddress;
import io.netty.util.NetUtil;
import org.junit.jupiter.api.Test;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@code serve --listen} used to be parsed and printed with Netty's NetUtil; cli-support does it with the JDK
 * alone. The ready line and error messages must not change: same addresses, same RFC 5952 text.
 */
class ListenAddressParityTest {

    /** What serve printed before: NetUtil's RFC 5952 form, IPv6 in brackets. */
    private static String nettyHostPort(InetSocketAddress a) {
        String host = NetUtil.toAddressString(a.getAddress());
        return (a.getAddress() instanceof Inet6Address ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    @Test
    void ipv6TextIsTheSameAsNettysForEveryZeroPattern() throws Exception {
        // Every combination of zero / non-zero groups (256), with varied non-zero values.
        Random random = new Random(42);
        for (int mask = 0; mask < 256; mask++) {
            byte[] b = new byte[16];
            for (int g = 0; g < 8; g++) {
                if ((mask & (1 << g)) != 0) {
                    int v = 1 + random.nextInt(0xffff);
                    b[2 * g] = (byte) (v >> 8);
                    b[2 * g + 1] = (byte) v;
                }
            }
            InetSocketAddress a = new InetSocketAddress(InetAddress.getByAddress(b), 7443);
            assertEquals(nettyHostPort(a), Cli.hostPort(a), () -> a.toString());
        }
        for (String s : List.of("127.0.0.1", "0.0.0.0", "10.1.2.3", "::1", "::", "fe80::1", "2001:db8::1:0:0:1")) {
            InetSocketAddress a = new InetSocketAddress(InetAddress.getByName(s), 0);
            assertEquals(nettyHostPort(a), Cli.hostPort(a), s);
        }
    }

    @Test
    void literalsParseToTheSameAddressesAsWithNetty() throws Exception {
        for (String host : List.of("127.0.0.1", "0.0.0.0", "255.255.255.255", "010.0.0.1", "01.02.03.004",
                "::1", "::", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "::FFFF:a:b", "1:2:3:4:5:6:7:8",
                "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "2001:DB8::1")) {
            byte[] netty = NetUtil.createByteArrayFromIpAddressString(host);
            InetAddress expected = InetAddress.getByAddress(netty);
            String text = host.indexOf(':') >= 0 ? "[" + host + "]:80" : host + ":80";
            InetSocketAddress parsed = ListenAddress.parse(text).resolve();
            assertEquals(expected, parsed.getAddress(), host);
            assertEquals(nettyHostPort(new InetSocketAddress(expected, 80)), Cli.hostPort(parsed), host);
        }
    }

    @Test
    void malformedIpv6IsRefusedAsNettyDid() {
        for (String host : List.of("1:2:3:4:5:6:7:8:9", "1::2::3", ":::", "12345::1", "::1:", ":1::", "1.2.3.4",
                "zz::1", "[::1")) {
            assertEquals(false, NetUtil.isValidIpV6Address(host), host);
            String text = "[" + host + "]:80";
            IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
                    IllegalArgumentException.class, () -> ListenAddress.parse(text), text);
            assertEquals("malformed IPv6 address", e.getMessage());
        }
    }
}
