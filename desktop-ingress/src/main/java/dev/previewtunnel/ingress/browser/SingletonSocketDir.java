package dev.previewtunnel.ingress.browser;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Chromium keeps its single-instance socket in a directory of its own under {@code TMPDIR}
 * ({@code org.chromium.Chromium.XXXXXX/SingletonSocket}, linked from the profile's {@code SingletonSocket}) and
 * removes it only on a clean exit: a browser killed (by {@link LaunchedBrowser#close()} after its grace period, or by
 * anyone) leaves it in {@code /tmp} for good, since a later launch drops only the profile's stale links. Once the
 * browser is gone this removes that directory and nothing else: one named as Chromium names it, owned by the
 * profile's owner, holding nothing but Chromium's own two entries. The profile's links stay (Chromium replaces them).
 */
final class SingletonSocketDir {
    private static final Logger LOG = LoggerFactory.getLogger(SingletonSocketDir.class);
    static final String SOCKET = "SingletonSocket";
    private static final List<String> ENTRIES = List.of(SOCKET, "SingletonCookie");
    // Chromium's and Chrome's names for it (base::CreateNewTempDirectory with the product's prefix).
    private static final Pattern DIR_NAME =
            Pattern.compile("(org\\.chromium\\.Chromium|com\\.google\\.Chrome(\\.\\w+)?)\\.\\w{6}");

    private SingletonSocketDir() {
    }

    /** Call only once the browser and its helpers have exited; best effort, never throws. */
    static void removeLeftover(Path profileDir) {
        try {
            Path dir = leftover(profileDir);
            if (dir == null) {
                return;
            }
            for (String entry : ENTRIES) {
                Files.deleteIfExists(dir.resolve(entry)); // the entry itself, never what a link points at
            }
            Files.delete(dir);
        } catch (DirectoryNotEmptyException e) {
            LOG.debug("kept Chromium's socket directory: it holds more than Chromium's entries");
        } catch (IOException | RuntimeException e) {
            LOG.debug("could not remove Chromium's socket directory: {}", e.toString());
        }
    }

    /** The directory the profile's {@code SingletonSocket} link points into, if Chromium's and ours; else null. */
    static Path leftover(Path profileDir) throws IOException {
        Path link = profileDir.resolve(SOCKET);
        if (!Files.isSymbolicLink(link)) {
            return null;
        }
        Path socket = Files.readSymbolicLink(link);
        Path dir = socket.getParent();
        if (!socket.isAbsolute() || dir == null || dir.getFileName() == null
                || !SOCKET.equals(socket.getFileName().toString())
                || !DIR_NAME.matcher(dir.getFileName().toString()).matches()
                || !Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return null;
        }
        PosixFileAttributes attrs = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        boolean ours = attrs.owner().equals(Files.getOwner(profileDir, LinkOption.NOFOLLOW_LINKS));
        return attrs.isDirectory() && ours ? dir : null;
    }
}
