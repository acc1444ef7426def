package dev.previewtunnel.grants;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class TargetHostTest {

    @Test
    void normalisesNamesAndLiterals() {
        assertEquals("localhost", TargetHost.normalise("LocalHost"));
        assertEquals("127.0.0.1", TargetHost.normalise("127.0.0.1"));
        assertEquals("::1", TargetHost.normalise("::1"));
        assertEquals("::1", TargetHost.normalise("[::1]"));
        assertEquals("::1", TargetHost.normalise("0:0:0:0:0:0:0:1"));
        assertEquals("::", TargetHost.normalise("::"));
        assertEquals("2001:db8::1", TargetHost.normalise("2001:0DB8:0000:0000:0000:0000:0000:0001"));
        assertEquals("2001:db8:0:1:1:1:1:1", TargetHost.normalise("2001:db8:0:1:1:1:1:1"));
        assertEquals("2001:0:0:1::1", TargetHost.normalise("2001:0:0:1:0:0:0:1"));
        assertEquals("::ffff:7f00:1", TargetHost.normalise("::ffff:127.0.0.1"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "local host", "a/b", "[::1", "::1::2", "1:2:3:4:5:6:7:8:9", "fe80::1%eth0", "[localhost]",
            "12345::", "::ffff:1.2.3.256", "ho\u00e9st"})
    void refusesInvalidHosts(String host) {
        assertThrows(IllegalArgumentException.class, () -> TargetHost.normalise(host));
    }

    @Test
    void parsesAuthorities() {
        assertEquals(new TargetHost.Canonical("::1", 5173), TargetHost.parseAuthority("[::1]:5173"));
        assertEquals(new TargetHost.Canonical("localhost", 3000), TargetHost.parseAuthority("LOCALHOST:3000"));
        assertEquals(new TargetHost.Canonical("127.0.0.1", 65535), TargetHost.parseAuthority("127.0.0.1:65535"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "localhost", "localhost:", ":80", "::1:5173", "[::1]", "[::1]5173", "host:0", "host:65536",
            "host:+80", "user@host:80", "host:80:81", "host: 80"})
    void refusesInvalidAuthorities(String authority) {
        assertThrows(IllegalArgumentException.class, () -> TargetHost.parseAuthority(authority));
    }
}
