package dev.previewtunnel.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/** Whether group or others may access a file or directory that holds secrets (a warning, or a refusal: SecretFiles). */
public final class OwnerOnlyCheck {
    private OwnerOnlyCheck() {
    }

    /**
     * The permissions of {@code path} ({@code rw-r--r--}) when group or others have any, else null; null too when
     * they cannot be read or the file system has no POSIX permissions.
     */
    public static String sharedPermissions(Path path) {
        try {
            if (!path.getFileSystem().supportedFileAttributeViews().contains("posix")) {
                return null;
            }
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(path);
            return perms.stream().anyMatch(p -> !p.name().startsWith("OWNER_"))
                    ? PosixFilePermissions.toString(perms) : null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
