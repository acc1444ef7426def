package dev.previewtunnel.ingress.browser;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Chromium keeps its single-instance socket in a directory of its own under {@code TMPDIR}
 * ({@code org.chromium.Chromium.XXXXXX/SingletonSocket}, linked from the profile's {@code SingletonSocket}) and
 * removes it only on a clean exit: a browser killed (by {@link LaunchedBrowser#close()} after its grace period, or by
 * anyone) leaves it in {@code /tmp} for good, since a later launch drops only the profile's stale links. This removes
 * that directory once the browser we started is gone, and nothing else: the profile's lock must still name that
 * browser's pid (another browser that holds the profile now, or that a second launch handed its URL to, names its
 * own), and the directory must be named as Chromium names it, owned by the profile's owner, and hold nothing but
 * Chromium's two entries. The profile's links stay (Chromium replaces them).
 */
final class SingletonSocketDir {
    private static final Logger LOG = LoggerFactory.getLogger(SingletonSocketDir.class);
    static final String SOCKET = "SingletonSocket";
    static final String LOCK = "SingletonLock";
    private static final List<String> ENTRIES = List.of(SOCKET, "SingletonCookie");
    // base::CreateNewTempDirectory: the product's prefix and mkdtemp's six characters.
    private static final Pattern DIR_NAME =
            Pattern.compile("(org\\.chromium\\.Chromium|com\\.google\\.Chrome)\\.[A-Za-z0-9]{6}");

    private SingletonSocketDir() {
    }

    /** Removes what {@code browser}, once exited, left in TMPDIR through {@code profileDir}; never throws. */
    static void removeLeftover(Path profileDir, Process browser) {
        if (browser.isAlive()) {
            return; // destroyTree's wait is bounded (or was interrupted): never pull the socket from a live browser
        }
        try {
            Path dir = leftover(profileDir, browser.pid());
            if (dir != null) {
                for (String entry : ENTRIES) {
                    Files.deleteIfExists(dir.resolve(entry)); // the entry itself, never what a link points at
                }
                Files.delete(dir);
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("could not remove Chromium's socket directory: {}", e.toString());
        }
    }

    /**
     * The directory the profile's {@code SingletonSocket} link points into, if the profile's lock names {@code pid}
     * and the directory is Chromium's, ours, and holds only Chromium's entries; else null.
     */
    static Path leftover(Path profileDir, long pid) throws IOException {
        Path link = profileDir.resolve(SOCKET);
        if (!Files.isSymbolicLink(link)) {
            return null;
        }
        // The link first, then the lock (HOSTNAME-PID): Chromium takes a profile lock first, directory and link
        // after, so a link read while the lock still names our browser is our browser's.
        Path socket = Files.readSymbolicLink(link);
        Path lock = profileDir.resolve(LOCK);
        if (!Files.isSymbolicLink(lock) || !Files.readSymbolicLink(lock).toString().endsWith("-" + pid)) {
            return null;
        }
        Path dir = socket.getParent();
        if (!socket.isAbsolute() || dir == null || dir.getFileName() == null
                || !SOCKET.equals(socket.getFileName().toString())
                || !DIR_NAME.matcher(dir.getFileName().toString()).matches()
                || !Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return null;
        }
        PosixFileAttributes attrs = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (!attrs.isDirectory() || !attrs.owner().equals(Files.getOwner(profileDir, LinkOption.NOFOLLOW_LINKS))) {
            return null;
        }
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.allMatch(e -> ENTRIES.contains(e.getFileName().toString())) ? dir : null;
        }
    }
}
