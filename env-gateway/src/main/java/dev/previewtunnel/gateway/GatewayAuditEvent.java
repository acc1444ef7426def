package dev.previewtunnel.gateway;

import dev.previewtunnel.local.audit.AuditEvent;

/**
 * Every audit event the gateway can write (docs/operations.md "Audit stream" has one row per name, checked both
 * ways by security-spikes' AuditEventsDocumentedTest). Renaming one breaks whatever reads the audit: don't.
 */
public enum GatewayAuditEvent implements AuditEvent {
    CONNECTION_OPENED,
    CONNECTION_CLOSED,
    CONNECTION_REFUSED,
    STREAM_OPENED,
    STREAM_REFUSED,
    STREAM_CLOSED,
    REVOKED,
    NON_LOOPBACK_TARGETS_ENABLED,
    TOKEN_ISSUED,
    GRANT_ISSUED,
    DRAIN_CUT,
    DRAIN_FINISHED;

    private final String wireName = AuditEvent.wireName(this); // once, not a toLowerCase per line

    @Override
    public String wireName() {
        return wireName;
    }
}
