package dev.previewtunnel.mux.client;

/** The tunnel connection to the gateway could not be established; the message says why, without secrets. */
public final class TunnelConnectException extends Exception {
    public TunnelConnectException(String message) {
        super(message, null, false, false);
    }
}
