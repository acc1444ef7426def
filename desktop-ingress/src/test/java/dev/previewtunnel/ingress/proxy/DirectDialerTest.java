package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which hosts direct egress may dial: only public addresses, judged on every resolver answer. A fixed-answer
 * resolver stands in for DNS so that "a public-looking name that answers with loopback" is a real case here.
 */
class DirectDialerTest {

    /** Records each lookup and answers with the given addresses. */
    private static final class FixedResolver implements DirectDialer.Resolver {
        final List<String> asked = new ArrayList<>();
        final String[] answers;

        FixedResolver(String... answers) {
            this.answers = answers;
        }

        @Override
        public InetAddress[] resolve(String host) throws UnknownHostException {
            asked.add(host);
            InetAddress[] out = new InetAddress[answers.length];
            for (int i = 0; i < answers.length; i++) {
                out[i] = InetAddress.getByAddress(host, io.netty.util.NetUtil.createByteArrayFromIpAddressString(answers[i]));
            }
            return out;
        }
    }

    private static void assertRefused(String host, DirectDialer.Resolver resolver) {
        TunnelStreamException e = assertThrows(TunnelStreamException.class,
                () -> DirectDialer.resolvePublic(host, resolver), host);
        assertEquals(TunnelError.POLICY_REFUSED, e.error(), host);
        assertEquals("direct_not_public", e.detail(), host);
    }

    /** IP literals are judged as they are, without asking a resolver. */
    @ParameterizedTest
    @ValueSource(strings = {
            "127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "0.0.0.0", "::",
            "169.254.169.254", "169.254.0.1", "fe80::1", "febf::1",
            "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "fc00::1", "fd12:3456::1",
            "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:192.168.0.1",
            "::127.0.0.1", "100.64.0.1", "100.127.255.255", "224.0.0.1", "239.255.255.250", "ff02::1",
            "255.255.255.255", "64:ff9b::7f00:1"})
    void nonPublicLiteralsAreRefusedWithoutALookup(String host) {
        FixedResolver resolver = new FixedResolver("8.8.8.8");
        assertRefused(host, resolver);
        assertEquals(List.of(), resolver.asked, "a literal is never looked up");
    }

    /** Spellings some resolvers read as 127.0.0.1 are refused rather than guessed at. */
    @ParameterizedTest
    @ValueSource(strings = {"2130706433", "0x7f000001", "0177.0.0.1", "127.1", "017700000001"})
    void numericSpellingsAreRefusedWithoutALookup(String host) {
        FixedResolver resolver = new FixedResolver("8.8.8.8");
        assertRefused(host, resolver);
        assertEquals(List.of(), resolver.asked);
    }

    @ParameterizedTest
    @ValueSource(strings = {"localhost", "LocalHost", "localhost.", "app.localhost", "a.b.localhost."})
    void localhostNamesAreRefusedWhateverAResolverWouldSay(String host) {
        FixedResolver lying = new FixedResolver("8.8.8.8");
        assertRefused(host, lying);
        assertEquals(List.of(), lying.asked);
    }

    @ParameterizedTest
    @ValueSource(strings = {"127.0.0.1", "::1", "0.0.0.0", "169.254.169.254", "fe80::1", "10.1.2.3", "172.20.0.1",
            "192.168.0.10", "fd00::1", "100.100.100.100", "::ffff:127.0.0.1", "224.0.0.251", "64:ff9b::a00:1"})
    void aNameIsRefusedAfterResolvingToANonPublicAddress(String answer) {
        FixedResolver rebinding = new FixedResolver(answer);
        assertRefused("rebind.example", rebinding);
        assertEquals(List.of("rebind.example"), rebinding.asked, "refused after the lookup, not before");
    }

    @Test
    void oneNonPublicAnswerAmongPublicOnesIsEnoughToRefuse() {
        assertRefused("mixed.example", new FixedResolver("93.184.216.34", "127.0.0.1"));
        assertRefused("mixed.example", new FixedResolver("2606:4700::1", "fe80::1"));
    }

    @Test
    void aPublicAnswerIsTheAddressDialed() throws Exception {
        FixedResolver resolver = new FixedResolver("93.184.216.34", "93.184.216.35");
        InetAddress dialed = DirectDialer.resolvePublic("public.example", resolver);
        assertArrayEquals(new byte[] {93, (byte) 184, (byte) 216, 34}, dialed.getAddress());
        InetAddress literal = DirectDialer.resolvePublic("8.8.8.8", resolver);
        assertArrayEquals(new byte[] {8, 8, 8, 8}, literal.getAddress());
        assertEquals(List.of("public.example"), resolver.asked);
    }

    @Test
    void anUnresolvableNameIsUnreachableNotRefusedByPolicy() {
        TunnelStreamException e = assertThrows(TunnelStreamException.class,
                () -> DirectDialer.resolvePublic("nowhere.invalid", host -> {
                    throw new UnknownHostException(host);
                }));
        assertEquals(TunnelError.TARGET_UNREACHABLE, e.error());
        TunnelStreamException empty = assertThrows(TunnelStreamException.class,
                () -> DirectDialer.resolvePublic("empty.example", host -> new InetAddress[0]));
        assertEquals(TunnelError.TARGET_UNREACHABLE, empty.error());
    }

    @Test
    void theProductionResolverNeverLetsLoopbackThrough() {
        // With the JDK resolver the dialer uses in production: localhost, 127.0.0.1 and ::1 never pass.
        for (String host : List.of("localhost", "127.0.0.1", "::1")) {
            TunnelStreamException e = assertThrows(TunnelStreamException.class,
                    () -> DirectDialer.resolvePublic(host, InetAddress::getAllByName), host);
            assertEquals(TunnelError.POLICY_REFUSED, e.error(), host);
        }
        assertTrue(DirectDialer.isLocalName("x.LOCALHOST"));
    }
}
