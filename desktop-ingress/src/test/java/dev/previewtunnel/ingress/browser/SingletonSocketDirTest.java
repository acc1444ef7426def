package dev.previewtunnel.ingress.browser;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a killed Chromium leaves in TMPDIR is removed, and nothing else: the directory must be named as Chromium names
 * it, reached through an absolute {@code SingletonSocket} link, and hold only Chromium's two entries. (A real
 * Chromium leaving it, and it removed by {@code close()}: {@code BrowserLauncherTest}.)
 */
class SingletonSocketDirTest {
    @TempDir
    Path tmp;

    Path profile() throws IOException {
        return Files.createDirectories(tmp.resolve("profile"));
    }

    /** A directory as Chromium leaves it, linked from the profile as Chromium links it. */
    Path leftBehind(Path profile, String name) throws IOException {
        Path dir = Files.createDirectory(tmp.resolve(name));
        Path socket = Files.createFile(dir.resolve(SingletonSocketDir.SOCKET));
        Files.createSymbolicLink(dir.resolve("SingletonCookie"), Path.of("7814419140855971829"));
        Files.createSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET), socket);
        return dir;
    }

    @Test
    void chromiumsAndChromesDirectoriesAreRemoved() throws IOException {
        for (String name : new String[] {"org.chromium.Chromium.UgwLG7", "com.google.Chrome.aB3dE9",
                "com.google.Chrome.beta.Xy12zz"}) {
            Path profile = profile();
            Path dir = leftBehind(profile, name);
            SingletonSocketDir.removeLeftover(profile);
            assertFalse(Files.exists(dir), name + " removed");
            assertTrue(Files.isSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET)), "the profile's link stays");
            Files.delete(profile.resolve(SingletonSocketDir.SOCKET));
        }
    }

    @Test
    void aDirectoryNotNamedAsChromiumNamesItStays() throws IOException {
        Path profile = profile();
        Path dir = leftBehind(profile, "my-project");
        SingletonSocketDir.removeLeftover(profile);
        assertTrue(Files.exists(dir.resolve(SingletonSocketDir.SOCKET)), "untouched");
    }

    @Test
    void aDirectoryHoldingAnythingElseStays() throws IOException {
        Path profile = profile();
        Path dir = leftBehind(profile, "org.chromium.Chromium.abcdef");
        Path other = Files.writeString(dir.resolve("notes.txt"), "not Chromium's");
        SingletonSocketDir.removeLeftover(profile);
        assertTrue(Files.exists(other), "another file stays");
        assertTrue(Files.isDirectory(dir), "so does its directory");
    }

    @Test
    void aRelativeLinkOrNoLinkIsLeftAlone() throws IOException {
        Path profile = profile();
        Path dir = Files.createDirectory(profile.resolve("org.chromium.Chromium.abcdef"));
        Files.createFile(dir.resolve(SingletonSocketDir.SOCKET));
        SingletonSocketDir.removeLeftover(profile); // no link yet: nothing to do
        Files.createSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET),
                Path.of("org.chromium.Chromium.abcdef", SingletonSocketDir.SOCKET));
        SingletonSocketDir.removeLeftover(profile);
        assertTrue(Files.exists(dir.resolve(SingletonSocketDir.SOCKET)), "a relative link is not Chromium's");
    }

    @Test
    void aLinkToSomethingNotNamedSingletonSocketIsLeftAlone() throws IOException {
        Path profile = profile();
        Path dir = Files.createDirectory(tmp.resolve("org.chromium.Chromium.abcdef"));
        Path file = Files.createFile(dir.resolve("important"));
        Files.createSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET), file);
        SingletonSocketDir.removeLeftover(profile);
        assertTrue(Files.exists(file), "untouched");
    }
}
