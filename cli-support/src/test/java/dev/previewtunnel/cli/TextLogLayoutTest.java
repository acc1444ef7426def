package dev.previewtunnel.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.LoggingEvent;
import org.junit.jupiter.api.Test;
import org.slf4j.event.KeyValuePair;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The text format: one plain line per event, nothing the JSON format would not show, no escaping but control. */
class TextLogLayoutTest {
    private final LoggerContext context = new LoggerContext();
    private final TextLogLayout layout = new TextLogLayout();

    TextLogLayoutTest() {
        layout.setContext(context);
        layout.start();
    }

    private LoggingEvent event(Level level, String pattern, Object... args) {
        LoggingEvent e = new LoggingEvent("x", context.getLogger("dev.previewtunnel.ingress.cli.RunCommand"), level,
                pattern, null, args);
        e.setTimeStamp(0);
        return e;
    }

    @Test
    void timeLevelClassMessageAndKeyValuesOnOneLine() {
        LoggingEvent e = event(Level.WARN, "first connection to the gateway {} failed: {}", "10.0.0.1:7443",
                "Connection refused");
        e.addKeyValuePair(new KeyValuePair("event", "gateway_unreachable"));
        e.addKeyValuePair(new KeyValuePair("reason", "connect failed"));
        String line = layout.doLayout(e);
        assertTrue(line.matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} WARN  RunCommand: first connection to the gateway "
                + "10\\.0\\.0\\.1:7443 failed: Connection refused event=gateway_unreachable "
                + "reason=\"connect failed\"" + System.lineSeparator()), line);
    }

    @Test
    void quotesAndBracesAreWrittenAsTheyAreNotJsonEscaped() {
        String line = layout.doLayout(event(Level.INFO, "start it with: chromium --proxy-bypass-list='<-loopback>' "
                + "\"{}\"", "http://localhost:5173/"));
        assertTrue(line.contains("INFO  RunCommand: start it with: chromium --proxy-bypass-list='<-loopback>' "
                + "\"http://localhost:5173/\""), line);
    }

    @Test
    void noValueCanBreakTheLineOrDriveTheTerminal() {
        LoggingEvent e = event(Level.INFO, "target {}", "evil\nINFO forged line\r\u001b[2J\t\u2028end");
        e.addKeyValuePair(new KeyValuePair("k\nx", "v\u0007"));
        String line = layout.doLayout(e);
        assertEquals(1, line.split("\\R", -1).length - 1, line);
        assertTrue(line.contains("target evil\\nINFO forged line\\r\\x1b[2J\\t\\u2028end k\\nx=v\\x07"), line);
    }

    @Test
    void showsTheFormattedMessageOnlyNeverTheMdc() {
        LoggingEvent e = event(Level.INFO, "session {} ready", "default");
        e.setMDCPropertyMap(Map.of("token", "secret-token-value"));
        String line = layout.doLayout(e);
        assertTrue(line.contains("RunCommand: session default ready"), line);
        assertFalse(line.contains("secret-token-value"), line);
    }

    @Test
    void anExceptionIsItsClassAndMessageOnTheSameLine() {
        LoggingEvent e = new LoggingEvent("x", context.getLogger("a.B"), Level.ERROR, "closing failed",
                new IllegalStateException("outer", new java.io.IOException("inner")), null);
        String line = layout.doLayout(e);
        assertTrue(line.endsWith("ERROR B: closing failed (java.lang.IllegalStateException: outer; caused by "
                + "java.io.IOException: inner)" + System.lineSeparator()), line);
    }
}
