package dev.previewtunnel.local.files;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
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
        replace(file, content.getBytes(java.nio.charset.StandardCharsets.UTF_8), false);
    }

    /**
     * As {@link #write}, and durable: the content is fsync-ed before the rename and the directory after it, so a
     * crash leaves the old file or the new one, never an empty one. Blocks on disk.
     */
    public static void writeDurably(Path file, byte[] content) throws IOException {
        replace(file, content, true);
    }

    private static void replace(Path file, byte[] content, boolean durable) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        ensureDirectory(dir);
        Path tmp = POSIX
                ? Files.createTempFile(dir, ".ptun", ".tmp", PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rw-------")))
                : Files.createTempFile(dir, ".ptun", ".tmp");
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                ByteBuffer buf = ByteBuffer.wrap(content);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                if (durable) {
                    ch.force(true);
                }
            }
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            if (durable && POSIX) {
                try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
                    d.force(true); // the rename itself survives a crash
                }
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }
}
