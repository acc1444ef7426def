package dev.previewtunnel.mux.local;

import java.io.IOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * Files that hold secrets (API tokens, proxy credentials): created owner-only from the first byte (never
 * written and then chmod-ed), replaced atomically, in a directory only the owner can enter.
 */
public final class OwnerOnlyFiles {
    private static final boolean POSIX = FileSystems.getDefault().supportedFileAttributeViews().contains("posix");

    private OwnerOnlyFiles() {
    }

    public static void ensureDirectory(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            if (POSIX) {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rwx------")));
            } else {
                Files.createDirectories(dir);
            }
        }
    }

    public static void write(Path file, String content) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        ensureDirectory(dir);
        Path tmp = POSIX
                ? Files.createTempFile(dir, ".ptun", ".tmp", PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rw-------")))
                : Files.createTempFile(dir, ".ptun", ".tmp");
        try {
            Files.writeString(tmp, content);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }
}
