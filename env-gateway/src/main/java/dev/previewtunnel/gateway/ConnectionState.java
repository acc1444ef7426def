package dev.previewtunnel.gateway;

/**
 * Per tunnel connection: its id for audit lines and the dials in progress on it. Touched only on the
 * connection's event loop (its streams share that loop).
 */
final class ConnectionState {
    final String id;
    int pendingDials;

    ConnectionState(String id) {
        this.id = id;
    }
}
