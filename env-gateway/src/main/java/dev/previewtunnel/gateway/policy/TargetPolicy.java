package dev.previewtunnel.gateway.policy;

import dev.previewtunnel.local.net.AddressClass;
import io.netty.util.NetUtil;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Which addresses the gateway may dial. Loopback only by default; extra networks only when configured.
 *
 * <p>Names are resolved once here and the resolved addresses are what is checked and then dialed, so a DNS
 * answer cannot change between check and use. {@code localhost} is never sent to DNS: it means
 * {@code 127.0.0.1} then {@code ::1} (dev servers bind one or the other). Address literals must be in
 * canonical form: decimal, octal and hex IPv4 spellings ({@code 2130706433}, {@code 0x7f.1},
 * {@code 0177.0.0.1}) are refused rather than interpreted, and IPv4-mapped or IPv4-compatible IPv6 forms are
 * judged as the IPv4 address they carry.
 */
public final class TargetPolicy {
    /** Name resolution; the system resolver in production, replaceable so tests can make a name lie. */
    @FunctionalInterface
    public interface Resolver {
        InetAddress[] resolve(String host) throws UnknownHostException;
    }

    /** What {@code localhost} dials, in order; built once, as every stream to a dev server asks for it. */
    private static final List<InetAddress> LOCALHOST = List.of(loopbackV4(),
            InetAddress.getLoopbackAddress() instanceof Inet6Address ? InetAddress.getLoopbackAddress() : loopbackV6());

    private final List<Cidr> allowed;
    private final Resolver resolver;

    private TargetPolicy(List<Cidr> allowed, Resolver resolver) {
        this.allowed = List.copyOf(allowed);
        this.resolver = resolver;
    }

    public static TargetPolicy loopbackOnly() {
        return new TargetPolicy(List.of(), InetAddress::getAllByName);
    }

    /** Loopback plus the given networks (an explicit, audited opt-in for non-loopback targets). */
    public static TargetPolicy loopbackPlus(List<Cidr> extra) {
        return new TargetPolicy(extra, InetAddress::getAllByName);
    }

    /** The same policy resolving names with {@code resolver}. */
    public TargetPolicy withResolver(Resolver replacement) {
        return new TargetPolicy(allowed, replacement);
    }

    public boolean allowsNonLoopback() {
        return !allowed.isEmpty();
    }

    /** True when {@code host} needs a DNS lookup (and so must be resolved off the event loop). */
    public static boolean needsDns(String host) {
        return !isLocalhost(host) && !NetUtil.isValidIpV4Address(host) && !NetUtil.isValidIpV6Address(host);
    }

    /**
     * Returns the addresses to dial, in order, or throws with the reason. May block on DNS when
     * {@link #needsDns} is true.
     */
    public List<InetAddress> resolve(String host) throws PolicyException {
        String h = host.toLowerCase(Locale.ROOT);
        if (isLocalhost(h)) {
            return LOCALHOST;
        }
        byte[] literal = NetUtil.createByteArrayFromIpAddressString(h);
        if (literal != null) {
            InetAddress address = toAddress(literal);
            check(address);
            return List.of(address);
        }
        if (looksLikeNumericSpelling(h)) {
            throw ambiguousSpelling();
        }
        InetAddress[] resolved;
        try {
            resolved = resolver.resolve(h);
        } catch (UnknownHostException e) {
            throw new PolicyException("policy_unresolvable", "target name does not resolve");
        }
        List<InetAddress> result = new ArrayList<>();
        for (InetAddress a : resolved) {
            InetAddress normalised = toAddress(a.getAddress());
            // Every answer must be allowed: a name that also points elsewhere is refused (DNS rebinding).
            check(normalised);
            result.add(normalised);
        }
        if (result.isEmpty()) {
            throw new PolicyException("policy_unresolvable", "target name does not resolve");
        }
        return result;
    }

    /**
     * What {@link #resolve} decides without DNS: {@code localhost} and address literals are judged, non-canonical
     * numeric spellings refused; any other name passes here and is judged when a stream dials it.
     */
    public void checkWithoutDns(String host) throws PolicyException {
        if (!needsDns(host)) {
            resolve(host);
        } else if (looksLikeNumericSpelling(host.toLowerCase(Locale.ROOT))) {
            throw ambiguousSpelling();
        }
    }

    private static PolicyException ambiguousSpelling() {
        return new PolicyException("policy_ambiguous_address", "non-canonical IP address spelling");
    }

    /** Checks one concrete address; the detail code says which rule refused it. */
    public void check(InetAddress address) throws PolicyException {
        InetAddress a = toAddress(address.getAddress());
        AddressClass kind = AddressClass.of(a);
        if (kind == AddressClass.LOOPBACK) {
            return;
        }
        for (Cidr cidr : allowed) {
            if (cidr.contains(a)) {
                return;
            }
        }
        switch (kind) {
            case UNSPECIFIED -> throw new PolicyException("policy_unspecified_address", "0.0.0.0 and :: are never dialed");
            case LINK_LOCAL -> throw new PolicyException("policy_link_local", "link-local and metadata addresses are refused");
            case MULTICAST -> throw new PolicyException("policy_multicast", "multicast addresses are refused");
            case PRIVATE -> throw new PolicyException("policy_private", "private-range addresses are refused");
            default -> throw new PolicyException("policy_not_loopback", "only loopback targets are allowed");
        }
    }

    static boolean isLocalhost(String host) {
        return "localhost".equalsIgnoreCase(host) || "localhost.".equalsIgnoreCase(host);
    }

    /** See {@link AddressClass#unwrap}. */
    static InetAddress toAddress(byte[] bytes) {
        return AddressClass.unwrap(bytes);
    }

    /** See {@link AddressClass#looksLikeNumericSpelling}. */
    static boolean looksLikeNumericSpelling(String h) {
        return AddressClass.looksLikeNumericSpelling(h);
    }

    private static InetAddress loopbackV4() {
        return toAddress(new byte[] {127, 0, 0, 1});
    }

    private static InetAddress loopbackV6() {
        byte[] b = new byte[16];
        b[15] = 1;
        try {
            return Inet6Address.getByAddress(null, b, -1);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }
}
