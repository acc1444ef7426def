package dev.previewtunnel.gateway.policy;

/** A target refused by policy; {@link #code()} is the audit/wire detail, the message is safe to show. */
public final class PolicyException extends Exception {
    private final String code;

    public PolicyException(String code, String message) {
        super(message, null, false, false);
        this.code = code;
    }

    public String code() {
        return code;
    }
}
