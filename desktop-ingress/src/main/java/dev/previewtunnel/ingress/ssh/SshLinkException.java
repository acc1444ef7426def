package dev.previewtunnel.ingress.ssh;

/** The SSH link failed; the message is one line in words for the user (never a secret, never a stack trace). */
public final class SshLinkException extends RuntimeException {
    public SshLinkException(String message) {
        super(message);
    }

    public SshLinkException(String message, Throwable cause) {
        super(message, cause);
    }
}
