package dev.previewtunnel.gateway.cli;

/** Process exit codes of {@code env-gateway}. Other tools script against them: keep them stable. */
final class ExitCodes {
    /** Success. */
    static final int OK = 0;
    /** Usage error or invalid argument (bad flag, malformed HOST:PORT, duration out of range...). */
    static final int USAGE = 1;
    /** Cannot bind the listen address, or an address is unreachable / does not resolve. */
    static final int UNREACHABLE = 2;
    /** Refused: key directory problem (keys missing or already present, key file open to group/others...). */
    static final int REFUSED = 3;
    /** Internal error (a bug, or an environment problem nothing else describes). */
    static final int INTERNAL = 4;

    /** Usage footer shared by every command (picocli format string: %n is a line break). */
    static final String FOOTER = "%nExit codes:%n"
            + "  0  ok%n"
            + "  1  usage error or invalid argument%n"
            + "  2  cannot bind the listen address, or an address is unreachable%n"
            + "  3  refused: key directory problem (keys missing or already present,%n"
            + "     key file readable by group/others, invalid key file, permission denied)%n"
            + "  4  internal error%n"
            + "Errors are reported as one line on stderr: env-gateway: <reason>";

    private ExitCodes() {
    }
}
