package dev.previewtunnel.cli;

/**
 * Process exit codes shared by {@code env-gateway} and {@code desktop-ingress}. Other tools script against them:
 * keep them stable.
 *
 * <p>Each program builds its usage footer from {@link #FOOTER_START}, its own line for {@link #REFUSED} (what
 * "refused" means differs per program), {@link #FOOTER_INTERNAL} and {@link #FOOTER_ERRORS} followed by
 * {@code "<program>: <reason>"}; all compile-time constants, so the result can go in a {@code @Command} annotation.
 */
public final class ExitCodes {
    /** Success. */
    public static final int OK = 0;
    /** Usage error or invalid argument (bad flag, malformed HOST:PORT, duration out of range...). */
    public static final int USAGE = 1;
    /**
     * Cannot bind a listen address, or something is unreachable / does not resolve (the gateway, a target, the
     * running ingress's control API, the gateway's admin endpoint).
     */
    public static final int UNREACHABLE = 2;
    /** Refused: a file or directory the program needs is missing, unreadable, or open to group/others. */
    public static final int REFUSED = 3;
    /** Internal error (a bug, or an environment problem nothing else describes). */
    public static final int INTERNAL = 4;

    /** Footer lines for codes 0 to 2 (picocli format string: %n is a line break). */
    public static final String FOOTER_START = "%nExit codes:%n"
            + "  0  ok%n"
            + "  1  usage error or invalid argument%n"
            + "  2  cannot bind a listen address, or something is unreachable (the gateway,%n"
            + "     a target, a running ingress or admin endpoint)%n";
    /** Footer line for code 4. */
    public static final String FOOTER_INTERNAL = "  4  internal error%n";
    /** Last footer line, to be followed by {@code "<program>: <reason>"}. */
    public static final String FOOTER_ERRORS = "Errors are reported as one line on stderr: ";

    private ExitCodes() {
    }
}
