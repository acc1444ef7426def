package dev.previewtunnel.ingress.ssh;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SshDestinationTest {
    private static final String ALPHABET = "ab-_.@:[]/%19 \t\n;'$`\\x-Zz0";

    @Test
    void parsesTheFormsOpenAccepts() {
        assertEquals(new SshDestination(null, "devbox", 0), SshDestination.parse("ssh://devbox"));
        assertEquals(new SshDestination("me", "devbox.example", 2222),
                SshDestination.parse("ssh://me@devbox.example:2222"));
        assertEquals(new SshDestination(null, "::1", 22), SshDestination.parse("ssh://[::1]:22"));
        assertEquals(new SshDestination("u", "10.0.0.7", 0), SshDestination.parse("SSH://u@10.0.0.7/"));
        SshDestination d = SshDestination.parse("ssh://me@[fe80::1]:2222");
        assertEquals("me@[fe80::1]:2222", d.shown());
        assertEquals("me@fe80__1_2222", d.key());
        assertEquals("devbox_2222", SshDestination.parse("ssh://devbox:2222").key());
        assertEquals("devbox", SshDestination.parse("ssh://devbox").shown());
    }

    @Test
    void refusesWhatSshCouldReadAsAnOptionOrAShellCouldRead() {
        for (String bad : List.of("ssh://-oProxyCommand=x", "ssh://-lroot@host", "ssh://host:0", "ssh://host:65536",
                "ssh://me@-host", "ssh://-me@host", "ssh://", "ssh://@host", "devbox", "http://devbox",
                "ssh://host/path", "ssh://a b", "ssh://host;id", "ssh://[::1", "ssh://[-1]:22", "ssh://ho$t",
                "ssh://u@v@host", "ssh://host:22:22", "ssh://[host]:22")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SshDestination.parse(bad),
                    bad);
            assertFalse(e.getMessage().isBlank(), bad);
        }
    }

    /** Random and mutated inputs: a parse fails in words or yields parts ssh reads as values, and round trips. */
    @Test
    void randomInputsNeverYieldAnOptionAndRoundTrip() {
        Random random = new Random(19);
        List<String> seeds = List.of("ssh://me@host:22", "ssh://[::1]:2222", "ssh://h", "ssh://a.b-c_d@x-y.z");
        int parsed = 0;
        for (int i = 0; i < 20_000; i++) {
            String text = i % 2 == 0 ? "ssh://" + randomString(random, 1 + random.nextInt(16))
                    : mutate(random, seeds.get(random.nextInt(seeds.size())));
            SshDestination d;
            try {
                d = SshDestination.parse(text);
            } catch (IllegalArgumentException e) {
                assertFalse(e.getMessage().isBlank(), text);
                continue;
            }
            parsed++;
            assertFalse(d.host().startsWith("-"), text);
            assertTrue(d.user() == null || !d.user().startsWith("-"), text);
            assertTrue(d.host().chars().noneMatch(c -> c <= ' ' || "'\";$`\\/@".indexOf(c) >= 0), text);
            assertEquals(d, SshDestination.parse(d.toString()), text);
            assertTrue(d.key().matches("[a-z0-9._@-]+"), text);
        }
        assertTrue(parsed > 500, "the generator reaches valid destinations too: " + parsed);
    }

    @Test
    void noUserMeansSshsDefault() {
        assertNull(SshDestination.parse("ssh://devbox").user());
    }

    private static String randomString(Random random, int length) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < length; i++) {
            sb.append(ALPHABET.charAt(random.nextInt(ALPHABET.length())));
        }
        return sb.toString();
    }

    private static String mutate(Random random, String seed) {
        StringBuilder sb = new StringBuilder(seed);
        for (int n = 1 + random.nextInt(3); n > 0; n--) {
            int at = random.nextInt(sb.length() + 1);
            char c = ALPHABET.charAt(random.nextInt(ALPHABET.length()));
            switch (random.nextInt(3)) {
                case 0 -> sb.insert(at, c);
                case 1 -> { if (at < sb.length()) { sb.deleteCharAt(at); } }
                default -> { if (at < sb.length()) { sb.setCharAt(at, c); } }
            }
        }
        return sb.toString();
    }
}
