package dev.previewtunnel.mux.relay;

/**
 * Message written to a channel to half-close it after everything written before it: a TCP FIN on a socket
 * (see {@link SocketHalfCloseHandler}), {@code END_STREAM} on a tunnel stream (see {@link StreamByteAdapter}).
 * Lets {@link RelayHandler} treat both kinds of channel alike.
 */
public final class OutputShutdown {
    public static final OutputShutdown INSTANCE = new OutputShutdown();

    private OutputShutdown() {
    }

    @Override
    public String toString() {
        return "OutputShutdown";
    }
}
