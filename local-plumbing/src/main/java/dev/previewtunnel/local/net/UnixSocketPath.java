package dev.previewtunnel.local.net;

import java.net.UnixDomainSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * A Unix domain socket to listen on, written {@code unix:/absolute/path}. Absolute, so that what {@code ssh -L}
 * names on the other side is the same file whatever the server's working directory; at most 107 bytes, the
 * kernel's {@code sun_path} limit less its terminating NUL.
 *
 * @param path an absolute, normalized path
 */
public record UnixSocketPath(Path path) implements ListenEndpoint {
    /** How a listen value names a Unix socket. */
    public static final String SCHEME = "unix:";
    private static final int MAX_PATH_BYTES = 107;

    /**
     * Parses {@code unix:/absolute/path}.
     *
     * @throws IllegalArgumentException with the problem alone, never quoting the input
     */
    public static UnixSocketPath parse(String text) {
        if (text == null || !text.startsWith(SCHEME)) {
            throw new IllegalArgumentException("not unix:PATH");
        }
        String file = text.substring(SCHEME.length());
        if (!file.startsWith("/")) {
            throw new IllegalArgumentException("the socket path must be absolute");
        }
        if (file.getBytes(StandardCharsets.UTF_8).length > MAX_PATH_BYTES || file.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("the socket path must be at most " + MAX_PATH_BYTES + " bytes");
        }
        Path path = Path.of(file).normalize();
        if (path.getFileName() == null) {
            throw new IllegalArgumentException("the socket path names no file");
        }
        return new UnixSocketPath(path);
    }

    @Override
    public UnixDomainSocketAddress resolve() {
        return UnixDomainSocketAddress.of(path);
    }

    @Override
    public String toString() {
        return SCHEME + path;
    }
}
