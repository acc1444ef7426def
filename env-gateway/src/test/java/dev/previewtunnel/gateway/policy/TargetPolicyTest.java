package dev.previewtunnel.gateway.policy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The loopback-only target policy on its own: every forbidden address form of issue 3 with the reason code the
 * gateway sends as {@code ptun-error-detail}, the allowed loopback forms, and the opt-in allow-list. Names go
 * through a fixed map standing in for DNS ({@link #DNS}); nothing here touches the network, and the system
 * resolver is never asked (an unexpected name fails the test instead).
 */
class TargetPolicyTest {
    private static final Map<String, List<String>> DNS = Map.of(
            "app.preview.test", List.of("127.0.0.1"),
            "v6app.preview.test", List.of("::1"),
            "metadata.preview.test", List.of("169.254.169.254"),
            "internal.preview.test", List.of("10.1.2.3"),
            "rebind.preview.test", List.of("127.0.0.1", "10.0.0.5"),
            "mapped.preview.test", List.of("::ffff:192.168.0.1"),
            "empty.preview.test", List.of());

    private final List<String> asked = new ArrayList<>();

    private InetAddress[] resolve(String host) throws UnknownHostException {
        asked.add(host);
        List<String> answers = DNS.get(host);
        if (answers == null) {
            throw new UnknownHostException("not in the fixed map");
        }
        InetAddress[] out = new InetAddress[answers.size()];
        for (int i = 0; i < out.length; i++) {
            // Literal addresses: InetAddress.getByName does not query DNS for them.
            out[i] = InetAddress.getByAddress(host, InetAddress.getByName(answers.get(i)).getAddress());
        }
        return out;
    }

    private TargetPolicy policy() {
        return TargetPolicy.loopbackOnly().withResolver(this::resolve);
    }

    private static List<String> addresses(List<InetAddress> list) {
        return list.stream().map(InetAddress::getHostAddress).toList();
    }

    @ParameterizedTest(name = "{0} refused: {1}")
    @CsvSource({
            // link-local and metadata
            "169.254.169.254, policy_link_local",
            "169.254.0.1, policy_link_local",
            "fd00:ec2::254, policy_link_local",
            "fe80::1, policy_link_local",
            // private ranges
            "10.0.0.1, policy_private",
            "10.255.255.255, policy_private",
            "192.168.1.10, policy_private",
            "172.16.0.1, policy_private",
            "172.31.255.254, policy_private",
            "100.64.0.1, policy_private",
            "100.127.255.254, policy_private",
            "fd12:3456::1, policy_private",
            // unspecified
            "0.0.0.0, policy_unspecified_address",
            "::, policy_unspecified_address",
            // multicast
            "224.0.0.1, policy_multicast",
            "239.255.255.250, policy_multicast",
            "ff02::1, policy_multicast",
            // IPv4-mapped and IPv4-compatible IPv6 forms, judged as the IPv4 address they carry
            "::ffff:169.254.169.254, policy_link_local",
            "::ffff:a9fe:a9fe, policy_link_local",
            "::ffff:10.0.0.1, policy_private",
            "::ffff:0.0.0.0, policy_unspecified_address",
            "::ffff:224.0.0.1, policy_multicast",
            "::a9fe:a9fe, policy_link_local",
            "::169.254.169.254, policy_link_local",
            "::10.0.0.1, policy_private",
            // public addresses are simply not loopback
            "8.8.8.8, policy_not_loopback",
            "2001:db8::1, policy_not_loopback",
            "::ffff:8.8.8.8, policy_not_loopback",
            // non-canonical IPv4 spellings are refused, never interpreted
            "2130706433, policy_ambiguous_address",
            "0x7f000001, policy_ambiguous_address",
            "0x7f.0.0.1, policy_ambiguous_address",
            "0177.0.0.1, policy_ambiguous_address",
            "127.1, policy_ambiguous_address",
            "127.0.1, policy_ambiguous_address",
            "127.0.0.1., policy_ambiguous_address",
            "127.0.0.1.5, policy_ambiguous_address",
            "256.0.0.1, policy_ambiguous_address",
            "0, policy_ambiguous_address",
            // names: every answer is checked (fixed map standing in for DNS)
            "metadata.preview.test, policy_link_local",
            "internal.preview.test, policy_private",
            "rebind.preview.test, policy_private",
            "mapped.preview.test, policy_private",
            "empty.preview.test, policy_unresolvable",
            "nx.preview.test, policy_unresolvable",
    })
    void forbiddenTargetsAreRefusedWithTheirReason(String host, String code) {
        PolicyException e = assertThrows(PolicyException.class, () -> policy().resolve(host));
        assertEquals(code, e.code(), host);
        assertFalse(e.getMessage().isBlank(), "a reason a person can read");
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
            "127.0.0.1, 127.0.0.1",
            "127.1.2.3, 127.1.2.3",
            "127.255.255.254, 127.255.255.254",
            "::1, 0:0:0:0:0:0:0:1",
            "::ffff:127.0.0.1, 127.0.0.1",
            "::ffff:7f00:1, 127.0.0.1",
            "app.preview.test, 127.0.0.1",
            "v6app.preview.test, 0:0:0:0:0:0:0:1",
    })
    void loopbackTargetsAreAllowedAndTheCheckedAddressIsWhatIsDialed(String host, String dialed) throws Exception {
        assertEquals(List.of(dialed), addresses(policy().resolve(host)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"localhost", "LOCALHOST", "localhost."})
    void localhostMeansIpv4ThenIpv6LoopbackWithoutDns(String host) throws Exception {
        assertEquals(List.of("127.0.0.1", "0:0:0:0:0:0:0:1"), addresses(policy().resolve(host)));
        assertTrue(asked.isEmpty(), "localhost must never be sent to the resolver, was: " + asked);
        assertFalse(TargetPolicy.needsDns(host));
    }

    @Test
    void namesAreResolvedExactlyOnce() throws Exception {
        policy().resolve("app.preview.test");
        assertEquals(List.of("app.preview.test"), asked);
        assertTrue(TargetPolicy.needsDns("app.preview.test"));
        assertFalse(TargetPolicy.needsDns("127.0.0.1"));
        assertFalse(TargetPolicy.needsDns("::1"));
    }

    @Test
    void literalsAndNumericSpellingsNeverReachTheResolver() {
        for (String h : List.of("10.0.0.1", "169.254.169.254", "2130706433", "0x7f000001", "127.1", "::ffff:10.0.0.1")) {
            assertThrows(PolicyException.class, () -> policy().resolve(h), h);
        }
        assertTrue(asked.isEmpty(), "numeric hosts must not be resolved as names, was: " + asked);
    }

    @Test
    void lookalikeNamesAreNamesNotLocalhost() {
        // Not localhost: these go to the resolver (and fail here because the fixed map does not know them).
        for (String h : List.of("localhost.evil.test", "127.0.0.1.nip.test", "localhostx")) {
            PolicyException e = assertThrows(PolicyException.class, () -> policy().resolve(h), h);
            assertEquals("policy_unresolvable", e.code(), h);
        }
        assertEquals(List.of("localhost.evil.test", "127.0.0.1.nip.test", "localhostx"), asked);
    }

    @Test
    void allowListOpensExactlyTheConfiguredNetwork() throws Exception {
        TargetPolicy plus = TargetPolicy.loopbackPlus(List.of(Cidr.parse("10.1.2.0/24"), Cidr.parse("fd12:3456::/32")))
                .withResolver(this::resolve);
        assertTrue(plus.allowsNonLoopback());
        assertFalse(policy().allowsNonLoopback());
        assertEquals(List.of("10.1.2.3"), addresses(plus.resolve("10.1.2.3")));
        assertEquals(List.of("10.1.2.3"), addresses(plus.resolve("internal.preview.test")));
        assertEquals(List.of("10.1.2.3"), addresses(plus.resolve("::ffff:10.1.2.3")));
        assertEquals(List.of("127.0.0.1"), addresses(plus.resolve("127.0.0.1")));
        assertEquals(1, plus.resolve("fd12:3456::9").size());
        // Neighbouring addresses stay refused with their own reason.
        assertEquals("policy_private", assertThrows(PolicyException.class, () -> plus.resolve("10.1.3.1")).code());
        assertEquals("policy_private", assertThrows(PolicyException.class, () -> plus.resolve("fd12:3457::1")).code());
        assertEquals("policy_link_local",
                assertThrows(PolicyException.class, () -> plus.resolve("169.254.169.254")).code());
        // The allow-list does not make mixed answers acceptable when one of them is outside it.
        assertEquals("policy_private",
                assertThrows(PolicyException.class, () -> plus.resolve("rebind.preview.test")).code());
        // Nor does it relax the spelling rule.
        assertEquals("policy_ambiguous_address",
                assertThrows(PolicyException.class, () -> plus.resolve("10.1.2")).code());
    }

    @Test
    void cidrParsingRejectsNonsense() throws Exception {
        assertThrows(IllegalArgumentException.class, () -> Cidr.parse("10.0.0.0"));
        assertThrows(IllegalArgumentException.class, () -> Cidr.parse("10.0.0.0/33"));
        assertThrows(IllegalArgumentException.class, () -> Cidr.parse("example.test/8"));
        assertTrue(Cidr.parse("10.1.2.0/23").contains(addr("10.1.3.255")));
        assertFalse(Cidr.parse("10.1.2.0/23").contains(addr("10.1.4.0")));
    }

    @Test
    void checkJudgesMappedAddressesAsTheirIpv4() throws Exception {
        TargetPolicy p = policy();
        p.check(addr("127.0.0.1"));
        p.check(InetAddress.getByAddress(new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 127, 0, 0, 1}));
        PolicyException e = assertThrows(PolicyException.class, () -> p.check(InetAddress.getByAddress(
                new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, (byte) 169, (byte) 254, (byte) 169, (byte) 254})));
        assertEquals("policy_link_local", e.code());
    }

    private static InetAddress addr(String literal) throws UnknownHostException {
        return InetAddress.getByName(literal); // literal: no DNS
    }
}
