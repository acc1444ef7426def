package dev.previewtunnel.gateway.cli;

/**
 * A failure the CLI reports as one line on stderr with a specific exit code. The message must never contain
 * key material, a grant or a token. No stack trace is captured: the message is the whole story.
 */
final class CliException extends RuntimeException {
    private final int exitCode;

    CliException(int exitCode, String message) {
        super(message, null, false, false);
        this.exitCode = exitCode;
    }

    int exitCode() {
        return exitCode;
    }
}
