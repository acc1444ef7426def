package dev.previewtunnel.local.audit;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

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
    private static final JsonFactory JSON = new JsonFactory();
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

    /**
     * One line's fields in the order first put, a later put of the same key replacing the value in place (what the
     * Jackson tree it replaced did), written with a streaming generator: building an {@code ObjectNode} and
     * printing it was most of the ~6% of each side's event-loop time per stream open that its two audit lines cost
     * (docs/performance.md, finding 1). Same bytes as before: the generator is the one the tree printed with.
     */
    public final class Event {
        private final List<String> keys = new ArrayList<>(12);
        private final List<Object> values = new ArrayList<>(12);

        private Event(String name) {
            set("ts", InstantText.now());
            set("side", side);
            set("event", name);
        }

        public Event put(String key, String value) {
            if (value != null) {
                set(key, value);
            }
            return this;
        }

        public Event put(String key, long value) {
            set(key, value);
            return this;
        }

        private void set(String key, Object value) {
            int i = keys.indexOf(key);
            if (i >= 0) {
                values.set(i, value);
            } else {
                keys.add(key);
                values.add(value);
            }
        }

        public void write() {
            if (log.isInfoEnabled()) {
                log.info(toJson());
            }
        }

        /** The line as written. */
        String toJson() {
            StringWriter out = new StringWriter(256);
            try (JsonGenerator g = JSON.createGenerator(out)) {
                g.writeStartObject();
                for (int i = 0; i < keys.size(); i++) {
                    Object v = values.get(i);
                    if (v instanceof Long n) {
                        g.writeNumberField(keys.get(i), n);
                    } else {
                        g.writeStringField(keys.get(i), (String) v);
                    }
                }
                g.writeEndObject();
            } catch (IOException e) {
                throw new UncheckedIOException(e); // a StringWriter does not fail
            }
            return out.toString();
        }
    }
}
