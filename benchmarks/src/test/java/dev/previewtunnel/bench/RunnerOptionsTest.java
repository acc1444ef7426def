package dev.previewtunnel.bench;

import dev.previewtunnel.mux.local.JvmDefaults;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The runner's JVM options (its report of a server process that never got ready: lab.LabProcessTest). */
class RunnerOptionsTest {

    @Test
    void blankJvmOptionsAddNothing() {
        Config c = Config.parse(new String[]{"--gateway-jvm", "", "--ingress-jvm", "  ", "--root", "."});
        // An empty argument before -jar would be taken by java for the main class: the server would not start.
        assertEquals(List.of(), c.gatewayJvmExtra);
        assertEquals(Config.INGRESS_JVM_DEFAULT, c.ingressJvmExtra);
    }

    @Test
    void jvmOptionsAreSplitAtWhitespace() {
        Config c = Config.parse(new String[]{"--server-jvm", " -Xmx64m \t-Da=1  ", "--gateway-jvm", "-Db=2",
                "--root", "."});
        assertEquals(List.of("-Xmx64m", "-Da=1"), c.serverJvmOptions);
        assertEquals(List.of("-Db=2"), c.gatewayJvmExtra);
    }

    @Test
    void theDevTunnelsPeerIsAPathOfItsOwnBesideSshAndBeforeTheTunnel() {
        // Issue 21: dt (no cipher, beside ws) and dt-aes (aes256-gcm, beside wss), measured in that order.
        assertEquals(List.of("direct", "ssh", "dt", "dt-aes", "ws", "wss", "mux", "mux-tls", "mux-proxy"),
                new Config().paths);
        // ws-floor (finding 53) is measured only when --paths names it, after the others.
        assertEquals(new Config().paths, BenchRunner.ORDER.subList(0, BenchRunner.ORDER.size() - 1));
        assertEquals("ws-floor", BenchRunner.ORDER.get(BenchRunner.ORDER.size() - 1));
        assertEquals(List.of("ws", "ws-floor"), Config.parse(new String[]{"--paths", "ws,ws-floor", "--root", "."})
                .paths);
        IllegalArgumentException misspelt = assertThrows(IllegalArgumentException.class,
                () -> Config.parse(new String[]{"--paths", "ws,wsfloor", "--root", "."}));
        assertTrue(misspelt.getMessage().startsWith("unknown path wsfloor"), misspelt.getMessage());
        assertEquals(List.of("direct", "dt", "ws", "mux", "ws-floor"), Config.smoke().paths);
        assertEquals(List.of("dt", "dt-aes"), Config.parse(new String[]{"--paths", "dt,dt-aes", "--root", "."}).paths);
        assertTrue(Config.usage().contains("direct,ssh,dt,dt-aes,ws,wss,mux,mux-tls,mux-proxy"));
    }

    /** By default the servers run as users run them (issue 21), without native memory tracking's own memory. */
    @Test
    void defaultsAreWhatUsersRunAndTrackingIsOptIn() {
        Config c = Config.parse(new String[]{"--root", "."});
        assertEquals(List.of(JvmDefaults.MEMORY_OPTIONS.split(" ")), c.serverJvmOptions);
        assertFalse(c.nmt);
        assertTrue(Config.parse(new String[]{"--nmt", "--root", "."}).nmt);
        assertFalse(Config.parse(new String[]{"--nmt", "--no-nmt", "--root", "."}).nmt);
        assertTrue(Config.usage().contains(JvmDefaults.MEMORY_OPTIONS), Config.usage());
        // the ingress as its launcher runs it: C1 only; --ingress-jvm comes after, so its flags win
        assertEquals(List.of(JvmDefaults.INGRESS_COMPILER_OPTIONS), c.ingressJvmExtra);
        assertEquals(List.of(), c.gatewayJvmExtra);
        assertEquals(List.of(JvmDefaults.INGRESS_COMPILER_OPTIONS, "-XX:TieredStopAtLevel=4"), Config.parse(
                new String[]{"--ingress-jvm", "-XX:TieredStopAtLevel=4", "--root", "."}).ingressJvmExtra);
    }
}
