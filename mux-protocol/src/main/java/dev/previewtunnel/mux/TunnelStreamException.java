package dev.previewtunnel.mux;

/** A stream that could not be opened or was ended by the peer, with its typed reason. */
public final class TunnelStreamException extends Exception {
    private final TunnelError error;
    private final String detail;

    public TunnelStreamException(TunnelError error, String detail) {
        super(error.code() + (detail == null || detail.isEmpty() ? "" : ": " + detail), null, false, false);
        this.error = error;
        this.detail = detail == null ? "" : detail;
    }

    public TunnelError error() {
        return error;
    }

    /** Finer, non-secret reason (for example {@code grant_wrong_target}); may be empty. */
    public String detail() {
        return detail;
    }
}
