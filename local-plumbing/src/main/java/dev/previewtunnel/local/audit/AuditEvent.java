package dev.previewtunnel.local.audit;

/**
 * The name of an audit event, the {@code "event"} field of its line. Each side lists every name it can write in
 * one enum implementing this ({@code GatewayAuditEvent}, {@code IngressAuditEvent}), so the names are in one place
 * and docs/operations.md's audit table can be checked against them in both directions (security-spikes'
 * {@code AuditEventsDocumentedTest}).
 */
public interface AuditEvent {
    /** The name as written: the enum constant in lower case, e.g. {@code stream_opened}. */
    String wireName();

    /** The lower-case name of an enum constant: how every side's enum spells its names. */
    static String wireName(Enum<?> constant) {
        return constant.name().toLowerCase(java.util.Locale.ROOT);
    }
}
