package dev.previewtunnel.ingress.ssh;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SshCommandTest {
    private static final Path CTL = Path.of("/s/ssh/ab12cd34.sock");
    private final SshDestination dest = SshDestination.parse("ssh://me@devbox:2222");
    private final SshOptions options = new SshOptions(Path.of("/usr/bin/ssh"), Path.of("/k/id"),
            List.of("ServerAliveInterval=30", "ProxyJump=bastion"));

    @Test
    void theMasterPutsTheUsersOptionsBeforeTheLinksDefaultsAndTheHostLast() {
        List<String> master = new SshCommand(dest, options, CTL, true).master();
        assertEquals(List.of("/usr/bin/ssh", "-M", "-S", CTL.toString(), "-T", "-o", "ControlPersist=no"),
                master.subList(0, 7));
        // ssh keeps an option's first value: the user's ServerAliveInterval=30 wins over the link's 5
        assertTrue(master.indexOf("ServerAliveInterval=30") < master.indexOf("ServerAliveInterval=5"),
                master::toString);
        assertTrue(master.contains("BatchMode=yes"));
        assertEquals(List.of("-i", "/k/id", "-p", "2222", "-l", "me", "--", "devbox",
                        "sh -c 'exec cat >/dev/null'"), master.subList(master.size() - 9, master.size()));
        assertFalse(new SshCommand(dest, options, CTL, false).master().contains("BatchMode=yes"),
                "with a terminal, ssh may prompt");
    }

    @Test
    void otherCommandsGoThroughTheMasterAndNeverBecomeOne() {
        SshCommand c = new SshCommand(dest, options, CTL, false);
        List<String> fwd = c.control("forward", "-L", "127.0.0.1:4000:/run/gw.sock");
        assertEquals(List.of("/usr/bin/ssh", "-S", CTL.toString(), "-o", "ControlMaster=no"), fwd.subList(0, 5));
        assertTrue(fwd.containsAll(List.of("-O", "forward", "-L", "127.0.0.1:4000:/run/gw.sock", "BatchMode=yes")));
        assertEquals("devbox", fwd.get(fwd.size() - 1));
        List<String> remote = c.remote("sh -s");
        assertEquals(List.of("--", "devbox", "sh -s"), remote.subList(remote.size() - 3, remote.size()));
        assertTrue(remote.contains("-T"), "no terminal on the remote");
        assertFalse(remote.contains("-M"));
    }

    @Test
    void anSshOptionIsKeyEqualsValueNeverAFlag() {
        for (String bad : List.of("-oProxyCommand=sh", "ProxyJump", "=x", "A=b\nc")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new SshOptions(null, null, List.of(bad)), bad);
            assertTrue(e.getMessage().startsWith("an ssh option is KEY=VALUE"), e.getMessage());
        }
        assertEquals(List.of("ProxyJump=a,b"), new SshOptions(null, null, List.of("ProxyJump=a,b")).options());
    }

    @Test
    void anExplicitGatewayJarMustExist(@TempDir Path dir) throws Exception {
        Path jar = Files.createFile(dir.resolve("env-gateway.jar"));
        assertEquals(jar, GatewayJar.locate(jar));
        SshLinkException e = assertThrows(SshLinkException.class, () -> GatewayJar.locate(dir.resolve("none.jar")));
        assertEquals("the gateway jar " + dir.resolve("none.jar") + " does not exist or is not a file", e.getMessage());
    }

    @Test
    void remoteShellQuotingSurvivesQuotes() {
        assertEquals("'it'\\''s'", RemoteShell.quote("it's"));
        assertEquals("sh -c 'exec '\\''/opt/j d k/java'\\'' -jar x'", RemoteShell.sh("exec '/opt/j d k/java' -jar x"));
    }
}
