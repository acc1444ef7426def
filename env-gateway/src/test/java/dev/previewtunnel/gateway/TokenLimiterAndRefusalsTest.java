package dev.previewtunnel.gateway;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.local.audit.RepeatedRefusals;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link RepeatedRefusals} stays bounded whatever a peer varies: more kinds than {@link RepeatedRefusals#MAX_KINDS}
 * are counted under one overflow kind, every refusal is accounted for by a first line or a summary, and a kind
 * that stops repeating is forgotten. {@link TokenLimiter} likewise forgets tokens with nothing left to remember.
 */
class TokenLimiterAndRefusalsTest {

    @Test
    void manyKindsCostBoundedMemoryAndLinesAndEveryRefusalIsCounted() {
        RepeatedRefusals refusals = new RepeatedRefusals(new AuditLog("gateway"));
        try (Lines lines = new Lines()) {
            int kinds = 3 * RepeatedRefusals.MAX_KINDS;
            for (int round = 0; round < 3; round++) {
                for (int k = 0; k < kinds; k++) {
                    refusals.refused("test_refused", line -> line.put("extra", "x"), "code", "c" + k);
                }
            }
            assertTrue(refusals.trackedKinds() <= RepeatedRefusals.MAX_KINDS + 1, "kinds tracked: "
                    + refusals.trackedKinds());
            assertEquals(RepeatedRefusals.MAX_KINDS, lines.lines.size(), "one full line per tracked kind");
            refusals.flush(true);
            long covered = lines.lines.stream().mapToLong(Lines::covered).sum();
            assertEquals(3L * kinds, covered, "first lines plus summaries account for every refusal");
            assertTrue(lines.lines.stream().anyMatch(l -> l.contains("\"kind\":\"other\"")), "the overflow kind");
            // Nothing repeated since the flush: the next flush forgets every kind.
            refusals.flush(true);
            assertEquals(0, refusals.trackedKinds());
        }
    }

    @Test
    void tokensWithoutConnectionsOrSpentBudgetAreForgotten() {
        TokenLimiter limiter = new TokenLimiter(GatewayLimits.defaults());
        for (int i = 0; i < 3 * TokenLimiter.SWEEP_ABOVE; i++) {
            limiter.connect("t" + i).disconnected();
        }
        assertEquals(0, limiter.trackedTokens(), "an idle token is forgotten when its last connection closes");
        TokenLimiter.Token spent = limiter.connect("spent");
        assertTrue(spent.reserveGrantVerification());
        spent.grantVerified(false);
        spent.disconnected();
        assertEquals(1, limiter.trackedTokens(), "a token with a spent unit is remembered across reconnects");
    }

    /** The audit lines written while open. */
    static final class Lines extends AppenderBase<ILoggingEvent> implements AutoCloseable {
        final List<String> lines = new CopyOnWriteArrayList<>();
        private final Logger logger = (Logger) LoggerFactory.getLogger(AuditLog.LOGGER);

        Lines() {
            setContext(logger.getLoggerContext());
            start();
            logger.addAppender(this);
        }

        @Override
        protected void append(ILoggingEvent event) {
            lines.add(event.getFormattedMessage());
        }

        static long covered(String line) {
            int at = line.indexOf("\"repeated\":");
            if (at < 0) {
                return 1;
            }
            int end = at + 11;
            while (end < line.length() && Character.isDigit(line.charAt(end))) {
                end++;
            }
            return Long.parseLong(line.substring(at + 11, end));
        }

        @Override
        public void close() {
            logger.detachAppender(this);
            stop();
        }
    }
}
