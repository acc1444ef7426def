package dev.previewtunnel.cli;

/**
 * A failure the CLI reports as one line on stderr with a specific exit code. The message must never contain
 * key material, a grant, a token or a password. No stack trace is captured: the message is the whole story.
 */
public final class CliException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int exitCode;

    public CliException(int exitCode, String message) {
        super(message, null, false, false);
        this.exitCode = exitCode;
    }

    public int exitCode() {
        return exitCode;
    }
}
