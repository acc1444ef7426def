package dev.previewtunnel.grants;

/**
 * A grant or connection token was refused.
 *
 * <p>The message is built only from the {@link GrantFailure} and a detail string the verifier
 * composes itself (never the token, never a JJWT message, never a cause), so it is safe to log.
 * No stack trace is captured: refusals happen at request rate and the reason is the whole story.
 */
public final class GrantException extends Exception {
    private final GrantFailure failure;

    public GrantException(GrantFailure failure, String safeDetail) {
        super(failure.code() + (safeDetail == null || safeDetail.isEmpty() ? "" : ": " + safeDetail),
                null, false, false);
        this.failure = failure;
    }

    public GrantFailure failure() {
        return failure;
    }
}
