package dev.previewtunnel.cli;

import dev.previewtunnel.local.files.OwnerOnlyFiles;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.ConnectException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The socket file of a command that listens on a Unix domain socket ({@code --listen unix:PATH}). Its directory is
 * created rwx------ if missing, else must be ours and not writable by group/others ({@link TrustedPaths}, as a state
 * directory): whoever can write there could put a socket of their own in its place. A socket file already there is
 * replaced only when nothing answers on it (left by a crashed process); anything else at the path refuses the start.
 */
public final class UnixSocketFile {
    private static final Logger log = LoggerFactory.getLogger(UnixSocketFile.class);
    private static final int S_IFMT = 0170000;
    private static final int S_IFSOCK = 0140000;

    /** What is at a socket path now. */
    public enum State {
        /** Nothing: a listener can bind it. */
        ABSENT,
        /** A socket nothing answers on (its listener died): replaced at bind. */
        STALE,
        /** A socket a process answers on. */
        LIVE,
        /** A file, directory or symbolic link: never replaced. */
        NOT_A_SOCKET
    }

    private UnixSocketFile() {
    }

    /**
     * Looks at {@code socket} without changing it; a socket is probed with one non-blocking connect (refused: stale;
     * accepted or pending: live), which the process listening there sees as a connection closed at once.
     *
     * @throws IOException when the path cannot be examined (e.g. permission denied on the socket)
     */
    public static State probe(Path socket) throws IOException {
        int mode;
        try {
            mode = (Integer) Files.getAttribute(socket, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return State.ABSENT;
        }
        if ((mode & S_IFMT) != S_IFSOCK) {
            return State.NOT_A_SOCKET;
        }
        try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            probe.configureBlocking(false);
            probe.connect(UnixDomainSocketAddress.of(socket)); // true, or pending with a full backlog: it listens
            return State.LIVE;
        } catch (ConnectException e) {
            return State.STALE; // ECONNREFUSED: a socket file with no listener behind it
        }
    }

    /**
     * Makes {@code socket} bindable as above, or refuses: a live socket is exit 2 naming it, anything else
     * (untrusted directory, not a socket, cannot be examined) exit 3.
     *
     * @param option the option that named it, for the messages ({@code --listen})
     */
    public static void prepare(Path socket, String option) {
        String shown = "unix:" + socket;
        Path dir = socket.getParent();
        try {
            OwnerOnlyFiles.ensureDirectory(dir);
            TrustedPaths.requireTrustedDirectory(dir, "socket directory");
            switch (probe(socket)) {
                case LIVE -> throw new CliException(ExitCodes.UNREACHABLE, "cannot listen on " + shown
                        + ": a process already answers on it (another gateway?); stop it or pick another "
                        + option + " path");
                case NOT_A_SOCKET -> throw new CliException(ExitCodes.REFUSED, "cannot listen on " + shown
                        + ": the path exists and is not a socket; remove it or pick another " + option + " path");
                case STALE -> {
                    Files.delete(socket);
                    log.info("replaced the stale socket file {} (nothing answered on it)", socket);
                }
                case ABSENT -> {
                }
            }
        } catch (TrustedPaths.UntrustedException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage());
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot prepare " + shown + " (" + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : ": " + e.getMessage()) + ")");
        }
    }
}
