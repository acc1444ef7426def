package dev.previewtunnel.ingress.ssh;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Where the ssh master's control socket goes: {@code STATE/ssh/<link id>.sock}, owner-only. A Unix socket path has
 * at most 107 bytes and ssh binds a temporary name 17 bytes longer first, so a deep state directory falls back to an
 * owner-only {@code ptun-ssh-USER} directory under the temp directory.
 */
final class ControlSocketPath {
    private static final int MAX_BYTES = 104 - 17;

    private ControlSocketPath() {
    }

    static Path choose(Path stateDir, String linkId) {
        String name = linkId + ".sock";
        Path preferred = stateDir.toAbsolutePath().resolve("ssh");
        Path dir = fits(preferred, name) ? preferred
                : Path.of(System.getProperty("java.io.tmpdir"), "ptun-ssh-" + System.getProperty("user.name"));
        if (!fits(dir, name)) {
            throw new SshLinkException("no short enough place for the ssh control socket (" + dir.resolve(name)
                    + "): use a shorter --state-dir");
        }
        ownerOnlyDirectory(dir);
        return dir.resolve(name);
    }

    private static boolean fits(Path dir, String name) {
        return dir.resolve(name).toString().getBytes(StandardCharsets.UTF_8).length <= MAX_BYTES;
    }

    /** Creates {@code dir} rwx------, or accepts it only when it is a directory of ours that nobody else may enter. */
    private static void ownerOnlyDirectory(Path dir) {
        try {
            if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rwx------")));
            }
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS);
            boolean ours = Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)
                    && Files.getOwner(dir, LinkOption.NOFOLLOW_LINKS).getName().equals(System.getProperty("user.name"));
            if (!ours || !perms.equals(PosixFilePermissions.fromString("rwx------"))) {
                throw new SshLinkException("the ssh control socket directory " + dir
                        + " must be a directory of yours with mode rwx------ (it holds a live login)");
            }
        } catch (IOException | UnsupportedOperationException e) {
            throw new SshLinkException("cannot create the ssh control socket directory " + dir + ": " + e, e);
        }
    }
}
