package dev.previewtunnel.gateway.policy;

import io.netty.util.NetUtil;

import java.net.InetAddress;
import java.util.Arrays;

/** An address range in CIDR notation ({@code 10.1.2.0/24}, {@code fd12::/16}) for the non-loopback allow-list. */
public record Cidr(byte[] network, int prefix) {

    public static Cidr parse(String text) {
        int slash = text.indexOf('/');
        if (slash < 0) {
            throw new IllegalArgumentException("CIDR needs a /prefix: " + text);
        }
        byte[] addr = NetUtil.createByteArrayFromIpAddressString(text.substring(0, slash));
        if (addr == null) {
            throw new IllegalArgumentException("not an IP address: " + text);
        }
        int prefix = Integer.parseInt(text.substring(slash + 1));
        if (prefix < 0 || prefix > addr.length * 8) {
            throw new IllegalArgumentException("prefix out of range: " + text);
        }
        return new Cidr(addr, prefix);
    }

    public boolean contains(InetAddress address) {
        byte[] a = address.getAddress();
        if (a.length != network.length) {
            return false;
        }
        int full = prefix / 8;
        if (!Arrays.equals(a, 0, full, network, 0, full)) {
            return false;
        }
        int rest = prefix % 8;
        if (rest == 0) {
            return true;
        }
        int mask = (0xff << (8 - rest)) & 0xff;
        return (a[full] & mask) == (network[full] & mask);
    }

    @Override
    public String toString() {
        try {
            return InetAddress.getByAddress(network).getHostAddress() + "/" + prefix;
        } catch (java.net.UnknownHostException e) {
            return "?/" + prefix;
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Cidr c && c.prefix == prefix && Arrays.equals(c.network, network);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(network) * 31 + prefix;
    }
}
