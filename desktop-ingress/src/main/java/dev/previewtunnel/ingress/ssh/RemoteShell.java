package dev.previewtunnel.ingress.ssh;

/**
 * Remote command lines. ssh hands its command to the remote user's login shell, which may not be POSIX (fish, csh):
 * every command is a POSIX script run as {@code sh -c 'SCRIPT'}, and every value in a script is single-quoted, a
 * quoting that fish, csh and sh all read the same way.
 */
final class RemoteShell {
    private RemoteShell() {
    }

    /** {@code value} as one single-quoted shell word. */
    static String quote(String value) {
        return "'" + value.replace("'", "'\\''") + "'";
    }

    /** The command line that runs {@code script} with the remote's POSIX sh. */
    static String sh(String script) {
        return "sh -c " + quote(script);
    }
}
