package dev.previewtunnel.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** One long-running command per state directory; the kernel's lock, so a killed holder never blocks the next. */
class StateLockTest {
    @TempDir
    Path dir;

    @Test
    void aSecondAcquireInThisProcessIsRefusedUntilTheFirstIsClosed() throws Exception {
        long pid = ProcessHandle.current().pid();
        try (StateLock first = StateLock.acquire(dir, "desktop-ingress run", "give this one another --state-dir")) {
            Path file = dir.resolve(StateLock.FILE);
            assertEquals(pid + "\n", Files.readString(file));
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
            CliException e = assertThrows(CliException.class,
                    () -> StateLock.acquire(dir, "desktop-ingress run", "give this one another --state-dir"));
            assertEquals(ExitCodes.REFUSED, e.exitCode());
            assertEquals("state directory " + dir + " is in use by another desktop-ingress run (pid " + pid
                    + "); stop it, or give this one another --state-dir", e.getMessage());
        }
        Path alias = Files.createSymbolicLink(dir.resolveSibling(dir.getFileName() + "-alias"), dir);
        try (StateLock first = StateLock.acquire(dir, "desktop-ingress run", "x")) {
            assertThrows(CliException.class, () -> StateLock.acquire(alias, "desktop-ingress run", "x"),
                    "another name of the same directory");
        } finally {
            Files.delete(alias);
        }
        StateLock.acquire(dir, "desktop-ingress run", "x").close();
        assertTrue(Files.exists(dir.resolve(StateLock.FILE)), "the file stays; only the lock counts");
    }

    @Test
    void aLockFileThatIsASymbolicLinkIsRefused() throws Exception {
        Path elsewhere = Files.writeString(dir.resolve("elsewhere"), "");
        Files.createSymbolicLink(dir.resolve(StateLock.FILE), elsewhere);
        CliException e = assertThrows(CliException.class, () -> StateLock.acquire(dir, "run", "x"));
        assertEquals(ExitCodes.REFUSED, e.exitCode());
        assertTrue(e.getMessage().startsWith("cannot lock state directory " + dir), e.getMessage());
    }

    @Test
    void anotherProcessHoldingTheLockIsNamedAndItsKillReleasesIt() throws Exception {
        Process holder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), StateLockHolder.class.getName(), dir.toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(),
                    StandardCharsets.UTF_8));
            assertEquals("locked", out.readLine());
            CliException e = assertThrows(CliException.class, () -> StateLock.acquire(dir, "env-gateway serve",
                    "give this one another --state-dir"));
            assertEquals(ExitCodes.REFUSED, e.exitCode());
            assertTrue(e.getMessage().contains("in use by another env-gateway serve (pid " + holder.pid() + ")"),
                    e.getMessage());

            holder.destroyForcibly(); // SIGKILL: no shutdown hook, no cleanup; the file stays
            assertTrue(holder.waitFor(30, TimeUnit.SECONDS));
            assertEquals(holder.pid() + "\n", Files.readString(dir.resolve(StateLock.FILE)));
            try (StateLock next = StateLock.acquire(dir, "env-gateway serve", "x")) {
                assertEquals(ProcessHandle.current().pid() + "\n", Files.readString(dir.resolve(StateLock.FILE)));
            }
        } finally {
            holder.destroyForcibly();
            holder.waitFor(30, TimeUnit.SECONDS);
        }
    }
}
