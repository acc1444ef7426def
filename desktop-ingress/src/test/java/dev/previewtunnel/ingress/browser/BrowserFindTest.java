package dev.previewtunnel.ingress.browser;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BrowserFindTest {
    @TempDir
    Path dir;

    Path executable(Path dir, String name) throws IOException {
        Files.createDirectories(dir);
        return Files.createFile(dir.resolve(name),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    }

    @Test
    void anExplicitBinaryMustBeExecutable() throws IOException {
        Path plain = Files.createFile(dir.resolve("chromium"));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> BrowserLauncher.find(plain));
        assertTrue(e.getMessage().contains("is not an executable file"), e.getMessage());
        Path exe = executable(dir.resolve("bin"), "my-chrome");
        assertEquals(exe, BrowserLauncher.find(exe));
    }

    @Test
    void pathIsSearchedInTheOrderOfTheNames() throws IOException {
        Path a = dir.resolve("a");
        Path b = dir.resolve("b");
        executable(a, "google-chrome");
        Path chromium = executable(b, "chromium");
        Files.createFile(a.resolve("chromium")); // not executable: skipped
        assertEquals(Optional.of(chromium), BrowserLauncher.onPath(a + ":" + b));
        assertEquals(Optional.of(a.resolve("google-chrome")), BrowserLauncher.onPath(a.toString()));
        assertEquals(Optional.empty(), BrowserLauncher.onPath(dir.toString()));
    }

    @Test
    void aProfileDirectoryStaysUnderTheStateDirectory() {
        Path state = Path.of("/state");
        assertEquals(Path.of("/state/browser-profiles/dev_example.com_2222--ptun-ab12"),
                BrowserLauncher.profileDir(state, "dev@example.com:2222", "ptun-ab12"));
        assertEquals(Path.of("/state/browser-profiles/..--.._x"), BrowserLauncher.profileDir(state, "..", "../x"));
        assertEquals(Path.of("/state/browser-profiles/--s"), BrowserLauncher.profileDir(state, "", "s"));
    }

    @Test
    void proxyServerBracketsIpv6() {
        assertEquals("http://127.0.0.1:8080",
                BrowserLauncher.proxyServer(new java.net.InetSocketAddress("127.0.0.1", 8080)));
        assertEquals("http://[0:0:0:0:0:0:0:1]:8080",
                BrowserLauncher.proxyServer(new java.net.InetSocketAddress("::1", 8080)));
    }
}
