package dev.previewtunnel.local.net;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * What kind of address an IP is, judged after unwrapping IPv4-mapped ({@code ::ffff:a.b.c.d}) and
 * IPv4-compatible ({@code ::a.b.c.d}) IPv6 forms to the IPv4 address they carry. Both ends use it: the
 * gateway's target policy (loopback only by default) and the desktop's direct-egress policy (public only).
 */
public enum AddressClass {
    LOOPBACK,
    /** 0.0.0.0 and :: (on Linux a connect to them reaches loopback). */
    UNSPECIFIED,
    /** 169.254/16, fe80::/10, and the cloud metadata addresses in them or next to them (fd00:ec2::254). */
    LINK_LOCAL,
    MULTICAST,
    /**
     * RFC 1918, carrier-grade NAT 100.64/10, IPv6 unique-local fc00::/7 (and the deprecated site-local fec0::/10),
     * the reserved 0/8 and 240/4, and NAT64 addresses that translate to a non-public IPv4 address.
     */
    PRIVATE,
    PUBLIC;

    public static AddressClass of(InetAddress address) {
        InetAddress a = unwrap(address.getAddress());
        if (a.isLoopbackAddress()) {
            return LOOPBACK;
        }
        if (a.isAnyLocalAddress()) {
            return UNSPECIFIED;
        }
        byte[] b = a.getAddress();
        boolean fd00Ec2 = b.length == 16 && (b[0] & 0xff) == 0xfd && b[1] == 0 && (b[2] & 0xff) == 0x0e
                && (b[3] & 0xff) == 0xc2;
        if (a.isLinkLocalAddress() || fd00Ec2) {
            return LINK_LOCAL;
        }
        if (a.isMulticastAddress()) {
            return MULTICAST;
        }
        boolean uniqueLocal = a instanceof Inet6Address && (b[0] & 0xfe) == 0xfc;
        boolean carrierNat = a instanceof Inet4Address && (b[0] & 0xff) == 100 && (b[1] & 0xc0) == 64;
        boolean reserved = a instanceof Inet4Address && ((b[0] & 0xff) == 0 || (b[0] & 0xff) >= 240);
        if (a.isSiteLocalAddress() || uniqueLocal || carrierNat || reserved || nat64ToNonPublic(b)) {
            return PRIVATE;
        }
        return PUBLIC;
    }

    /**
     * A NAT64 address (RFC 6052 well-known prefix 64:ff9b::/96, or the local-use 64:ff9b:1::/48 of RFC 8215)
     * reaches, through the network's NAT64 translator, the IPv4 address it embeds: on a desktop behind NAT64 a
     * DNS answer of {@code 64:ff9b::c0a8:101} is 192.168.1.1 on the LAN. Not unwrapped as an IPv4-mapped form is,
     * because the socket does not reach the desktop's own IPv4 address (never loopback): it is never public when
     * the embedded address is not, and the local-use prefix is never public at all.
     */
    private static boolean nat64ToNonPublic(byte[] b) {
        if (b.length != 16 || b[0] != 0 || b[1] != 0x64 || (b[2] & 0xff) != 0xff || (b[3] & 0xff) != 0x9b) {
            return false;
        }
        if (b[4] == 0 && b[5] == 1) {
            return true; // 64:ff9b:1::/48, local use
        }
        for (int i = 4; i < 12; i++) {
            if (b[i] != 0) {
                return false;
            }
        }
        try {
            InetAddress embedded = InetAddress.getByAddress(new byte[] {b[12], b[13], b[14], b[15]});
            return of(embedded) != PUBLIC;
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("bad address length", e);
        }
    }

    /**
     * Raw address bytes to an address, unwrapping IPv4-mapped and IPv4-compatible IPv6 forms to the IPv4
     * address they carry ({@code ::} and {@code ::1} stay IPv6).
     */
    public static InetAddress unwrap(byte[] bytes) {
        try {
            if (bytes.length == 16) {
                boolean firstTenZero = true;
                for (int i = 0; i < 10; i++) {
                    firstTenZero &= bytes[i] == 0;
                }
                boolean mapped = firstTenZero && bytes[10] == (byte) 0xff && bytes[11] == (byte) 0xff;
                boolean compatible = firstTenZero && bytes[10] == 0 && bytes[11] == 0
                        && !(bytes[12] == 0 && bytes[13] == 0 && bytes[14] == 0 && (bytes[15] == 0 || bytes[15] == 1));
                if (mapped || compatible) {
                    return InetAddress.getByAddress(new byte[] {bytes[12], bytes[13], bytes[14], bytes[15]});
                }
            }
            return InetAddress.getByAddress(bytes);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("bad address length", e);
        }
    }

    /**
     * Host strings made only of digits, dots and hex markers are address spellings, not names: decimal
     * ({@code 2130706433}), hex ({@code 0x7f000001}), octal ({@code 0177.0.0.1}) or short ({@code 127.1}) forms
     * that some resolvers interpret as IPv4. Refuse them rather than guess.
     */
    public static boolean looksLikeNumericSpelling(String host) {
        String s = host.endsWith(".") ? host.substring(0, host.length() - 1) : host;
        if (s.isEmpty()) {
            return true;
        }
        for (String label : s.split("\\.", -1)) {
            if (label.isEmpty()) {
                return true;
            }
            boolean numeric = label.chars().allMatch(Character::isDigit)
                    || (label.startsWith("0x") && label.substring(2).chars().allMatch(c -> Character.digit(c, 16) >= 0));
            if (!numeric) {
                return false;
            }
        }
        return true;
    }
}
