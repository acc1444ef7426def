package dev.previewtunnel.mux.client;

/**
 * The tunnel connection to the gateway could not be established; the message says why, without secrets. The
 * {@link Reason} and, when the gateway answered, its {@link UpgradeAnswer} let a caller (the doctors) act on the
 * kind of failure without parsing the message.
 */
public final class TunnelConnectException extends Exception {
    /** How far the attempt got. */
    public enum Reason {
        /** TCP connect failed (refused, no route, unknown host). */
        UNREACHABLE,
        /** Connected, or tried to, but no answer to the upgrade within the timeout. */
        NO_ANSWER,
        /** The TLS handshake failed (untrusted certificate, wrong name). */
        TLS_FAILED,
        /** The peer closed the connection before answering the upgrade. */
        CLOSED,
        /** The peer answered the upgrade with something other than 101: see {@link #answer()}. */
        REFUSED,
        /** Anything else: a bad URL, a 101 without our subprotocol, an answer that is not HTTP. */
        OTHER
    }

    private final Reason reason;
    private final UpgradeAnswer answer;

    public TunnelConnectException(String message) {
        this(Reason.OTHER, message, null);
    }

    public TunnelConnectException(Reason reason, String message) {
        this(reason, message, null);
    }

    public TunnelConnectException(Reason reason, String message, UpgradeAnswer answer) {
        super(message, null, false, false);
        this.reason = reason;
        this.answer = answer;
    }

    public Reason reason() {
        return reason;
    }

    /** The gateway's answer when {@link #reason()} is {@link Reason#REFUSED}, else null. */
    public UpgradeAnswer answer() {
        return answer;
    }
}
