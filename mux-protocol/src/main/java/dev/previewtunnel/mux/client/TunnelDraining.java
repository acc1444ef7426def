package dev.previewtunnel.mux.client;

/**
 * User event fired on every stream of a tunnel connection when the gateway sent GOAWAY: the stream may finish,
 * but a handler that keeps a stream open only for reuse (an idle HTTP keep-alive upstream) should let it go now,
 * so the gateway's drain completes as soon as the real work is done.
 */
public final class TunnelDraining {
    public static final TunnelDraining INSTANCE = new TunnelDraining();

    private TunnelDraining() {
    }
}
