package dev.previewtunnel.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The one check both programs run before trusting a state directory or a file in it (control.json, credentials,
 * admin token and address, persisted revocations): it must belong to the user running this process, and no other
 * user may change it (a directory) or touch it at all (a file). Another user who can write there could swap a file
 * that points our token at their listener, or one that un-revokes a grant. Root's own root-owned files are fine.
 * On a file system without POSIX attributes nothing is checked (there is nothing to check against).
 */
public final class TrustedPaths {
    private static final Set<PosixFilePermission> GROUP_OTHER_WRITE = Set.of(PosixFilePermission.GROUP_WRITE,
            PosixFilePermission.OTHERS_WRITE);

    private TrustedPaths() {
    }

    /** Why a path is not trusted; the message is one line, names the path and the fix, never a file's content. */
    public static final class UntrustedException extends IOException {
        public UntrustedException(String message) {
            super(message);
        }
    }

    /** Refuses {@code dir} (what: e.g. "state directory") when another user owns it or group/others may write it. */
    public static void requireTrustedDirectory(Path dir, String what) throws IOException {
        if (!posix(dir)) {
            return;
        }
        requireOwnedByUs(dir, what);
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(dir);
        if (perms.stream().anyMatch(GROUP_OTHER_WRITE::contains)) {
            throw new UntrustedException(what + " " + dir + " is writable by group/others ("
                    + PosixFilePermissions.toString(perms) + "): run chmod 700 " + dir);
        }
    }

    /**
     * Refuses {@code file} when another user owns it or group/others have any permission on it: a file that holds
     * a secret, or says where to send one, is owner-only.
     */
    public static void requireOwnerOnlyFile(Path file, String what) throws IOException {
        if (!posix(file)) {
            return;
        }
        requireOwnedByUs(file, what);
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
        if (perms.stream().anyMatch(p -> !p.name().startsWith("OWNER_"))) {
            throw new UntrustedException(what + " " + file + " is open to group/others ("
                    + PosixFilePermissions.toString(perms) + "): run chmod 600 " + file);
        }
    }

    /**
     * Refuses {@code path} (a public file such as verification keys, or its directory) when group/others may
     * write it or it belongs to anyone but this user or root: whoever can change it can add a key of their own.
     * Others may read it. Root is accepted as owner so that a service user can use keys an administrator installed.
     */
    public static void requireUnwritableByOthers(Path path, String what) throws IOException {
        if (!posix(path)) {
            return;
        }
        int owner = (Integer) Files.getAttribute(path, "unix:uid");
        if (owner != 0 && owner != currentUid()) {
            throw new UntrustedException(what + " " + path + " belongs to uid " + owner + ", not to this user (uid "
                    + currentUid() + ") or root: whoever owns it can change it");
        }
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(path);
        if (perms.stream().anyMatch(GROUP_OTHER_WRITE::contains)) {
            throw new UntrustedException(what + " " + path + " is writable by group/others ("
                    + PosixFilePermissions.toString(perms) + "): run chmod go-w " + path);
        }
    }

    private static void requireOwnedByUs(Path path, String what) throws IOException {
        int owner = (Integer) Files.getAttribute(path, "unix:uid");
        long us = currentUid();
        if (owner != us) {
            throw new UntrustedException(what + " " + path + " belongs to uid " + owner + ", not to this user (uid "
                    + us + "): use one of your own");
        }
    }

    private static boolean posix(Path path) {
        return path.getFileSystem().supportedFileAttributeViews().contains("unix");
    }

    /** The real uid of this process, from the JDK's own Unix system query. */
    static long currentUid() {
        return new com.sun.security.auth.module.UnixSystem().getUid();
    }
}
