package dev.previewtunnel.grants;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/** The only file I/O in this module: owner-only atomic writes and the permission check on reads. */
final class KeyFiles {
    static final Set<PosixFilePermission> OWNER_RW = PosixFilePermissions.fromString("rw-------");
    static final Set<PosixFilePermission> OWNER_RWX = PosixFilePermissions.fromString("rwx------");

    private KeyFiles() {
    }

    static boolean isPosix(Path path) {
        return path.getFileSystem().supportedFileAttributeViews().contains("posix");
    }

    /** Creates the directory (rwx------ on POSIX) if missing. An existing directory is left as it is. */
    static void createPrivateDirectory(Path dir) throws IOException {
        if (Files.isDirectory(dir)) return;
        if (isPosix(dir)) {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(OWNER_RWX));
        } else {
            Files.createDirectories(dir);
        }
    }

    /**
     * Writes {@code content} to {@code target} so that readers see either the old or the new file,
     * never a partial one, and the key never exists on disk with wider permissions: the temp file is
     * created rw------- (permissions applied at creation, not chmod-ed afterwards), flushed to disk,
     * then renamed over the target within the same directory.
     */
    static void writeOwnerOnlyAtomically(Path target, byte[] content) throws IOException {
        Path dir = target.toAbsolutePath().getParent();
        String prefix = "." + target.getFileName() + ".";
        Path tmp = isPosix(dir)
                ? Files.createTempFile(dir, prefix, ".tmp", PosixFilePermissions.asFileAttribute(OWNER_RW))
                : Files.createTempFile(dir, prefix, ".tmp", new FileAttribute<?>[0]);
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                ByteBuffer buf = ByteBuffer.wrap(content);
                while (buf.hasRemaining()) ch.write(buf);
                ch.force(true);
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
    }

    /**
     * Refuses a private key file that anyone but the owner can access: a key that other local users
     * could read can mint grants, so we fail loudly instead of using it.
     */
    static void requireOwnerOnly(Path file) throws IOException {
        if (!isPosix(file)) return;
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
        for (PosixFilePermission p : perms) {
            if (!p.name().startsWith("OWNER_")) {
                throw new IllegalStateException("signing key " + file + " has permissions "
                        + PosixFilePermissions.toString(perms) + "; run chmod 600 " + file);
            }
        }
    }
}
