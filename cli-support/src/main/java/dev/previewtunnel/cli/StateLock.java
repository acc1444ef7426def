package dev.previewtunnel.cli;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashSet;
import java.util.Set;

/**
 * One long-running command per state directory ({@code desktop-ingress run}, {@code env-gateway serve
 * --admin-listen}, {@code desktop-ingress open} per host): an exclusive lock on {@value #FILE} in it, held until
 * the command stops. The lock is what counts, not the file: the kernel drops it when the process ends, even by
 * SIGKILL, so a crashed process never blocks the next. The file (owner-only) holds the holder's pid, for the
 * message of the one refused. It is never deleted: deleting it while locked would let a third process lock a new
 * file while a second still waits on the old one.
 *
 * <p>Within one JVM (tests run several commands in-process) a registry stands in for the lock: POSIX locks belong
 * to the process, and closing any channel on the file would drop the holder's.
 */
public final class StateLock implements AutoCloseable {
    /** The lock file in the state directory. */
    public static final String FILE = "run.lock";
    private static final Set<Path> HELD = new HashSet<>(); // guarded by itself

    private final Path file;
    private final FileChannel channel;
    private final FileLock lock;

    private StateLock(Path file, FileChannel channel, FileLock lock) {
        this.file = file;
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Locks {@code dir} (an existing, trusted state directory) for {@code command} ({@code desktop-ingress run}), or
     * refuses with exit 3 in one line naming the directory, the holder's pid and {@code fix}.
     */
    public static StateLock acquire(Path dir, String command, String fix) {
        Path file = realPath(dir).resolve(FILE);
        synchronized (HELD) {
            if (HELD.contains(file)) {
                throw inUse(dir, command, String.valueOf(ProcessHandle.current().pid()), fix);
            }
            FileChannel channel = null;
            try {
                channel = open(file);
                FileLock lock;
                try {
                    lock = channel.tryLock();
                } catch (OverlappingFileLockException e) {
                    lock = null;
                }
                if (lock == null) {
                    throw inUse(dir, command, holder(channel), fix);
                }
                byte[] pid = (ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII);
                channel.truncate(0);
                channel.write(ByteBuffer.wrap(pid), 0);
                HELD.add(file);
                StateLock held = new StateLock(file, channel, lock);
                channel = null;
                return held;
            } catch (IOException e) {
                throw new CliException(ExitCodes.REFUSED, "cannot lock state directory " + dir + " (" + file
                        + ": " + e.getClass().getSimpleName() + ")");
            } finally {
                closeQuietly(channel);
            }
        }
    }

    /** The directory without symbolic links, so that two names of one directory are one key of the registry. */
    private static Path realPath(Path dir) {
        try {
            return dir.toRealPath();
        } catch (IOException e) {
            return dir.toAbsolutePath().normalize(); // opening the file then fails and says so
        }
    }

    private static FileChannel open(Path file) throws IOException {
        Set<OpenOption> options = Set.of(StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
        if (!file.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            return FileChannel.open(file, options);
        }
        FileAttribute<?> ownerOnly = PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));
        return FileChannel.open(file, options, ownerOnly);
    }

    /** The pid the holder wrote, or "unknown" (it may not have written it yet). */
    private static String holder(FileChannel channel) {
        try {
            ByteBuffer buf = ByteBuffer.allocate(32);
            channel.read(buf, 0);
            String text = new String(buf.array(), 0, buf.position(), StandardCharsets.US_ASCII).strip();
            return text.matches("[0-9]{1,19}") ? text : "unknown";
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static CliException inUse(Path dir, String command, String pid, String fix) {
        return new CliException(ExitCodes.REFUSED, "state directory " + dir + " is in use by another " + command
                + " (pid " + pid + "); stop it, or " + fix);
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException e) {
                // nothing held through it
            }
        }
    }

    /** Releases the lock (the file stays, see the class comment). Idempotent. */
    @Override
    public void close() {
        synchronized (HELD) {
            if (!channel.isOpen()) {
                return;
            }
            try {
                lock.release();
            } catch (IOException e) {
                // closing the channel releases it too
            }
            closeQuietly(channel);
            HELD.remove(file);
        }
    }
}
