package dev.previewtunnel.ingress;

import dev.previewtunnel.local.audit.AuditEvent;

/**
 * Every audit event the ingress can write (docs/operations.md "Audit stream" has one row per name, checked both
 * ways by security-spikes' AuditEventsDocumentedTest). Renaming one breaks whatever reads the audit: don't.
 */
public enum IngressAuditEvent implements AuditEvent {
    REQUEST_REFUSED,
    STREAM_OPENED,
    STREAM_CLOSED,
    GRANT_REFRESH,
    REQUEST_RETRIED,
    REDIRECT_NOT_GRANTED,
    DRAIN_CUT,
    DRAIN_FINISHED;

    private final String wireName = AuditEvent.wireName(this); // once, not a toLowerCase per line

    @Override
    public String wireName() {
        return wireName;
    }
}
