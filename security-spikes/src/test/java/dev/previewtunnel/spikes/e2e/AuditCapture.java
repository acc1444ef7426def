package dev.previewtunnel.spikes.e2e;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.local.audit.AuditLog;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

/**
 * Captures the {@code ptun.audit} lines (the same JSON the test logback config writes to
 * target/audit-test.jsonl) while open, so a run can assert on what the ingress and gateway audited.
 */
public final class AuditCapture extends AppenderBase<ILoggingEvent> implements AutoCloseable {
    private final List<JsonNode> lines = new CopyOnWriteArrayList<>();
    private final Logger logger = (Logger) LoggerFactory.getLogger(AuditLog.LOGGER);

    public AuditCapture() {
        setName("audit-capture-" + System.identityHashCode(this));
        setContext(logger.getLoggerContext());
        start();
        logger.addAppender(this);
    }

    @Override
    protected void append(ILoggingEvent event) {
        try {
            lines.add(SpikeResult.JSON.readTree(event.getFormattedMessage()));
        } catch (IOException e) {
            // not an audit JSON line
        }
    }

    public List<JsonNode> lines() {
        return lines;
    }

    public List<JsonNode> matching(Predicate<JsonNode> p) {
        return lines.stream().filter(p).toList();
    }

    public static Predicate<JsonNode> event(String side, String name) {
        return n -> side.equals(n.path("side").asText()) && name.equals(n.path("event").asText());
    }

    @Override
    public void close() {
        logger.detachAppender(this);
        stop();
    }
}
