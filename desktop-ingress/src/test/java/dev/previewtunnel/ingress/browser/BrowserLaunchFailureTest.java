package dev.previewtunnel.ingress.browser;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A "browser" that exits at once or never answers: a failure in words, bounded, and nothing left running. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BrowserLaunchFailureTest {
    static final InetSocketAddress PROXY = new InetSocketAddress("127.0.0.1", 9);

    @TempDir
    Path dir;

    Path script(String body) throws IOException {
        Path s = dir.resolve("fake-browser");
        Files.writeString(s, "#!/bin/sh\n" + body + "\n");
        Files.setPosixFilePermissions(s, PosixFilePermissions.fromString("rwx------"));
        return s;
    }

    @Test
    void aBrowserThatExitsAtOnceIsReportedWithItsStatus() throws IOException {
        Path fake = script("echo starting; exit 3");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> BrowserLauncher.launch(fake,
                dir.resolve("profile"), PROXY, "u", "p", List.of(), List.of(), Duration.ofSeconds(20)));
        assertTrue(e.getMessage().contains("exited with status 3 before it was ready"), e.getMessage());
        assertTrue(Files.readString(dir.resolve("profile").resolve(BrowserLauncher.LOG_FILE)).contains("starting"));
    }

    @Test
    void aBrowserThatNeverAnswersIsStoppedAfterTheTimeout() throws IOException {
        Path pidFile = dir.resolve("pid");
        Path fake = script("echo $$ > " + pidFile + "; exec sleep 60");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> BrowserLauncher.launch(fake,
                dir.resolve("profile"), PROXY, "u", "p", List.of(), List.of(), Duration.ofMillis(500)));
        assertTrue(e.getMessage().contains("did not answer over DevTools within PT0.5S"), e.getMessage());
        long pid = Long.parseLong(Files.readString(pidFile).trim());
        assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "the silent browser was stopped");
    }
}
