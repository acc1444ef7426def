package dev.previewtunnel.ingress.browser;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a killed Chromium leaves in TMPDIR is removed, and nothing else: the profile's lock must name the exited
 * browser's pid, the directory must be named as Chromium names it, reached through an absolute {@code SingletonSocket}
 * link, and hold only Chromium's two entries. (A real Chromium leaving it, and {@code close()} removing it:
 * {@code BrowserLauncherTest}.)
 */
class SingletonSocketDirTest {
    @TempDir
    Path tmp;
    /** Stands in for the browser we started, already exited. */
    Process exited;

    @BeforeEach
    void exitedProcess() throws Exception {
        exited = new ProcessBuilder("true").start();
        assertTrue(exited.waitFor(30, TimeUnit.SECONDS));
    }

    Path profile(long lockPid) throws IOException {
        Path profile = Files.createDirectories(tmp.resolve("profile"));
        Files.createSymbolicLink(profile.resolve(SingletonSocketDir.LOCK), Path.of("devbox-" + lockPid));
        return profile;
    }

    /** A directory as Chromium leaves it, linked from the profile as Chromium links it. */
    Path leftBehind(Path profile, String name) throws IOException {
        Path dir = Files.createDirectory(tmp.resolve(name));
        Path socket = Files.createFile(dir.resolve(SingletonSocketDir.SOCKET));
        Files.createSymbolicLink(dir.resolve("SingletonCookie"), Path.of("7814419140855971829"));
        Files.createSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET), socket);
        return dir;
    }

    @AfterEach
    void cleanProfile() throws IOException {
        Files.deleteIfExists(tmp.resolve("profile").resolve(SingletonSocketDir.SOCKET));
        Files.deleteIfExists(tmp.resolve("profile").resolve(SingletonSocketDir.LOCK));
    }

    @Test
    void chromiumsAndChromesDirectoriesAreRemoved() throws IOException {
        for (String name : new String[] {"org.chromium.Chromium.UgwLG7", "com.google.Chrome.aB3dE9"}) {
            Path profile = profile(exited.pid());
            Path dir = leftBehind(profile, name);
            SingletonSocketDir.removeLeftover(profile, exited);
            assertFalse(Files.exists(dir), name + " removed");
            assertTrue(Files.isSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET)), "the profile's link stays");
            cleanProfile();
        }
    }

    @Test
    void aProfileNowLockedByAnotherBrowserIsLeftAlone() throws IOException {
        // Our browser handed its URL to one already running on the profile, or another took the profile over.
        Path profile = profile(exited.pid() + 1);
        Path dir = leftBehind(profile, "org.chromium.Chromium.abcdef");
        SingletonSocketDir.removeLeftover(profile, exited);
        assertTrue(Files.exists(dir.resolve(SingletonSocketDir.SOCKET)), "the other browser's socket stays");
    }

    @Test
    void nothingIsRemovedWhileTheBrowserRuns() throws Exception {
        Process running = new ProcessBuilder("sleep", "60").start();
        try {
            Path profile = profile(running.pid());
            Path dir = leftBehind(profile, "org.chromium.Chromium.abcdef");
            SingletonSocketDir.removeLeftover(profile, running);
            assertTrue(Files.exists(dir.resolve(SingletonSocketDir.SOCKET)), "a live browser's socket stays");
        } finally {
            running.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void aDirectoryNotNamedAsChromiumNamesItStays() throws IOException {
        Path profile = profile(exited.pid());
        for (String name : new String[] {"my-project", "org.chromium.Chromium.ab_def", "com.google.Chrome.x.abcdef"}) {
            Path dir = leftBehind(profile, name);
            SingletonSocketDir.removeLeftover(profile, exited);
            assertTrue(Files.exists(dir.resolve(SingletonSocketDir.SOCKET)), name + " untouched");
            Files.delete(profile.resolve(SingletonSocketDir.SOCKET));
        }
    }

    @Test
    void aDirectoryHoldingAnythingElseIsLeftWhole() throws IOException {
        Path profile = profile(exited.pid());
        Path dir = leftBehind(profile, "org.chromium.Chromium.abcdef");
        Path other = Files.writeString(dir.resolve("notes.txt"), "not Chromium's");
        SingletonSocketDir.removeLeftover(profile, exited);
        assertTrue(Files.exists(other), "another file stays");
        assertTrue(Files.exists(dir.resolve(SingletonSocketDir.SOCKET)), "so does the socket");
        assertTrue(Files.isSymbolicLink(dir.resolve("SingletonCookie")), "and the cookie");
    }

    @Test
    void aDirectoryThatIsALinkIsLeftAlone() throws IOException {
        Path profile = profile(exited.pid());
        Path real = Files.createDirectory(tmp.resolve("elsewhere"));
        Path socket = Files.createFile(real.resolve(SingletonSocketDir.SOCKET));
        Path linkDir = Files.createSymbolicLink(tmp.resolve("org.chromium.Chromium.abcdef"), real);
        Path linked = linkDir.resolve(SingletonSocketDir.SOCKET);
        Files.createSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET), linked);
        SingletonSocketDir.removeLeftover(profile, exited);
        assertTrue(Files.exists(socket), "what the linked directory points at is untouched");
        assertTrue(Files.isSymbolicLink(linkDir), "so is the link");
    }

    @Test
    void aRelativeLinkOrNoLinkIsLeftAlone() throws IOException {
        Path profile = profile(exited.pid());
        Path dir = Files.createDirectory(tmp.resolve("org.chromium.Chromium.abcdef"));
        Files.createFile(dir.resolve(SingletonSocketDir.SOCKET));
        SingletonSocketDir.removeLeftover(profile, exited); // no link yet: nothing to do
        assertTrue(Files.exists(dir.resolve(SingletonSocketDir.SOCKET)), "no link: untouched");
        // Relative to the working directory, so that it would reach the directory if it were followed.
        Path relative = Path.of("").toAbsolutePath().relativize(dir.resolve(SingletonSocketDir.SOCKET));
        Files.createSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET), relative);
        SingletonSocketDir.removeLeftover(profile, exited);
        assertTrue(Files.exists(dir.resolve(SingletonSocketDir.SOCKET)), "a relative link is not Chromium's");
    }

    @Test
    void aLinkToSomethingNotNamedSingletonSocketIsLeftAlone() throws IOException {
        Path profile = profile(exited.pid());
        Path dir = Files.createDirectory(tmp.resolve("org.chromium.Chromium.abcdef"));
        Files.createFile(dir.resolve(SingletonSocketDir.SOCKET));
        Path cookie = Files.createSymbolicLink(dir.resolve("SingletonCookie"), Path.of("7814419140855971829"));
        Files.createSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET), cookie);
        SingletonSocketDir.removeLeftover(profile, exited);
        assertTrue(Files.exists(dir.resolve(SingletonSocketDir.SOCKET)), "untouched");
    }

    @Test
    void aLockNamingAPidThatEndsInOursIsAnotherBrowsers() throws IOException {
        Path profile = profile(Long.parseLong("1" + exited.pid()));
        Path dir = leftBehind(profile, "org.chromium.Chromium.abcdef");
        SingletonSocketDir.removeLeftover(profile, exited);
        assertTrue(Files.exists(dir.resolve(SingletonSocketDir.SOCKET)), "pid 1" + exited.pid() + " is not ours");
    }
}
