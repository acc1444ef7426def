package dev.previewtunnel.local.audit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;

/**
 * One JSON line per access decision (stream opened, refused with its code, closed with byte counts...), on the
 * dedicated SLF4J logger {@value #LOGGER}, which each side's logging configuration routes to its own stream.
 * Shared by the gateway and the ingress so both write the same schema:
 * {@code {"ts":ISO-8601,"side":"gateway|ingress","event":NAME, ...fields}}.
 *
 * <p>Callers put only non-secret fields here: ids (jti, session id), authorities, codes, counts. Never a grant,
 * token, credential or cookie.
 */
public final class AuditLog {
    public static final String LOGGER = "ptun.audit";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Logger log = LoggerFactory.getLogger(LOGGER);

    private final String side;
    private final RepeatedRefusals repeated = new RepeatedRefusals(this);

    public AuditLog(String side) {
        this.side = side;
    }

    /**
     * A refusal a peer can repeat at will: written only if it is the first of its kind ({@code event} and
     * {@code keyFields}, name/value pairs) in the current window, else counted for a summary line
     * ({@link RepeatedRefusals}); {@code details} adds the fields of the full line.
     */
    public void refused(AuditEvent event, java.util.function.Consumer<Event> details, String... keyFields) {
        repeated.refused(event.wireName(), details, keyFields);
    }

    /** Writes the summaries of ended windows ({@code all}: every pending one, at close). Call it every second. */
    public void flushRepeated(boolean all) {
        repeated.flush(all);
    }

    /** Kinds of refusal tracked now (bounded by {@link RepeatedRefusals#MAX_KINDS} + 1). */
    public int trackedRefusalKinds() {
        return repeated.trackedKinds();
    }

    /** Starts an audit event; add fields, then {@link Event#write()}. */
    public Event event(AuditEvent event) {
        return new Event(event.wireName());
    }

    /** Only for {@link RepeatedRefusals}' summary lines, which repeat a name an {@link AuditEvent} gave. */
    Event event(String name) {
        return new Event(name);
    }

    public final class Event {
        private final ObjectNode node = JSON.createObjectNode();

        private Event(String name) {
            node.put("ts", Instant.now().toString());
            node.put("side", side);
            node.put("event", name);
        }

        public Event put(String key, String value) {
            if (value != null) {
                node.put(key, value);
            }
            return this;
        }

        public Event put(String key, long value) {
            node.put(key, value);
            return this;
        }

        public void write() {
            log.info(node.toString());
        }
    }
}
