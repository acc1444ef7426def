package dev.previewtunnel.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Set;

/**
 * What the doctors ask of a file's permissions and content (docs/security.md, owner-only state): a secret others
 * can read is theirs to use, a trust file others can write lets them swap it. Where permissions cannot be read
 * (no POSIX file system) nothing is reported as shared.
 */
public final class FileModes {
    private FileModes() {
    }

    /** True when group or others have any permission on {@code p}. */
    public static boolean shared(Path p) {
        try {
            if (!p.getFileSystem().supportedFileAttributeViews().contains("posix")) {
                return false;
            }
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(p);
            return perms.stream().anyMatch(x -> !x.name().startsWith("OWNER_"));
        } catch (IOException e) {
            return false;
        }
    }

    /** True when group or others may write {@code p}. */
    public static boolean writableByOthers(Path p) {
        try {
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(p);
            return perms.contains(PosixFilePermission.GROUP_WRITE) || perms.contains(PosixFilePermission.OTHERS_WRITE);
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    /** {@code rw-------}, or empty when permissions cannot be read. */
    public static String perms(Path p) {
        try {
            return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
        } catch (IOException | UnsupportedOperationException e) {
            return "";
        }
    }

    /** The lines of a token or grant file that hold a value: stripped, without blank lines and # comments. */
    public static List<String> valueLines(Path file) throws IOException {
        return Files.readString(file).lines().map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#"))
                .toList();
    }
}
