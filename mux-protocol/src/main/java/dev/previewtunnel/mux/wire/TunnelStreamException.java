package dev.previewtunnel.mux.wire;

/** A stream that could not be opened or was ended by the peer, with its typed reason. */
public final class TunnelStreamException extends Exception {
    private final TunnelError error;
    private final String detail;
    private final boolean retryable;

    public TunnelStreamException(TunnelError error, String detail) {
        this(error, detail, false);
    }

    /**
     * @param retryable true when the open failed before the gateway acted on it (the stream was refused with
     *                  REFUSED_STREAM, or its connection was draining or lost before an answer), so opening it
     *                  again elsewhere cannot duplicate anything: no application byte was sent yet
     */
    public TunnelStreamException(TunnelError error, String detail, boolean retryable) {
        super(error.code() + (detail == null || detail.isEmpty() ? "" : ": " + detail), null, false, false);
        this.error = error;
        this.detail = detail == null ? "" : detail;
        this.retryable = retryable;
    }

    public boolean retryable() {
        return retryable;
    }

    public TunnelError error() {
        return error;
    }

    /** Finer, non-secret reason (for example {@code grant_wrong_target}); may be empty. */
    public String detail() {
        return detail;
    }
}
