package dev.previewtunnel.gateway.revocation;

import dev.previewtunnel.gateway.GatewayAuditEvent;
import dev.previewtunnel.gateway.LiveStreams;
import dev.previewtunnel.gateway.TunnelConnections;
import dev.previewtunnel.grants.RevocationList;
import dev.previewtunnel.local.audit.AuditLog;

import java.io.IOException;

/**
 * Revoking a grant, a connection token or a browser session on a running gateway: refused from now on (the
 * {@link RevocationList} grant verification consults), what is already open with it closed at once, and the
 * whole list written to the {@link RevocationStore} (when there is one) so that a restart does not undo it.
 * The admin endpoint and tests call it; nothing here runs on a tunnel event loop (the store fsyncs).
 */
public final class Revocations {
    private final RevocationList list;
    private final RevocationStore store; // null: revocations last until this process ends
    private final LiveStreams liveStreams;
    private final TunnelConnections connections;
    private final AuditLog audit;

    public Revocations(RevocationList list, RevocationStore store, LiveStreams liveStreams,
                       TunnelConnections connections, AuditLog audit) {
        this.list = list;
        this.store = store;
        this.liveStreams = liveStreams;
        this.connections = connections;
        this.audit = audit;
    }

    /**
     * Revokes one grant or connection token by its id: refused from now on, every live stream opened with it
     * reset and every tunnel connection opened with it closed now. Returns how many live streams were closed.
     */
    public int revokeGrant(String jti) {
        list.revokeGrant(jti);
        int closed = liveStreams.closeGrant(jti);
        int closedConnections = connections.closeToken(jti);
        audit.event(GatewayAuditEvent.REVOKED).put("grant", jti).put("closedStreams", closed)
                .put("closedConnections", closedConnections).write();
        persist();
        return closed;
    }

    /** Revokes every grant of a browser session issued until now, closing its live streams. */
    public int revokeSession(String session) {
        list.revokeSession(session);
        int closed = liveStreams.closeSession(session);
        audit.event(GatewayAuditEvent.REVOKED).put("session", session).put("closedStreams", closed).write();
        persist();
        return closed;
    }

    /**
     * Writes the whole list to the store (blocking: fsync). The revocation is already in force and its streams
     * closed; a failure here means it would not survive a restart, which the caller must be told.
     */
    private void persist() {
        if (store == null) {
            return;
        }
        try {
            store.save(list::entries);
        } catch (IOException e) {
            throw new RevocationNotPersistedException(store.file(), e);
        }
    }
}
