package dev.previewtunnel.gateway.control;

import java.util.Locale;

/**
 * A request the control channel answers with {@code {"id":N,"error":CODE,"message":...}}. The message is fixed
 * words chosen here, never the request's text: a line may carry a grant or a token, and the answer must not
 * repeat it (docs/security.md, "Secrets").
 */
final class ControlError extends RuntimeException {
    /** The wire's error codes, written in lower case. */
    enum Code {
        BAD_REQUEST, INVALID_TARGET, TTL_TOO_LONG, UNKNOWN_OP, INTERNAL;

        String wire() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final Code code;

    ControlError(Code code, String message) {
        super(message, null, false, false);
        this.code = code;
    }

    Code code() {
        return code;
    }
}
