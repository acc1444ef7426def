package dev.previewtunnel.cli;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.LayoutBase;
import org.slf4j.event.KeyValuePair;

import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;

/**
 * The {@code text} log format: one line per event, for a person at a terminal:
 * {@code 14:03:07.512 WARN  RunCommand: first connection to the gateway ... failed; ... event=gateway_unreachable}.
 * Local time, level, the logger's class name, the formatted message, then the event's key-values. Only what
 * the JSON format shows too (the formatted message and key-values, never the raw arguments or the MDC); control
 * characters are written as escapes ({@code \n}, {@code \x1b}) so that no value can start a line of its own or
 * drive the terminal. An exception is its class and message (the stack trace is in the json format).
 */
public final class TextLogLayout extends LayoutBase<ILoggingEvent> {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSS")
            .withZone(ZoneId.systemDefault());

    @Override
    public String doLayout(ILoggingEvent event) {
        StringBuilder b = new StringBuilder(160);
        b.append(TIME.format(Instant.ofEpochMilli(event.getTimeStamp()))).append(' ');
        String level = event.getLevel().toString();
        b.append(level).append(" ".repeat(Math.max(1, 6 - level.length())));
        String logger = event.getLoggerName();
        b.append(logger.substring(logger.lastIndexOf('.') + 1)).append(": ");
        appendEscaped(b, event.getFormattedMessage());
        if (event.getKeyValuePairs() != null) {
            for (KeyValuePair kv : event.getKeyValuePairs()) {
                b.append(' ');
                appendEscaped(b, kv.key);
                b.append('=');
                String value = String.valueOf(kv.value);
                boolean quote = value.isEmpty() || value.chars().anyMatch(Character::isWhitespace);
                if (quote) {
                    b.append('"');
                }
                appendEscaped(b, value);
                if (quote) {
                    b.append('"');
                }
            }
        }
        for (IThrowableProxy t = event.getThrowableProxy(); t != null; t = t.getCause()) {
            b.append(t == event.getThrowableProxy() ? " (" : "; caused by ");
            appendEscaped(b, t.getClassName() + (t.getMessage() == null ? "" : ": " + t.getMessage()));
            if (t.getCause() == null) {
                b.append(')');
            }
        }
        return b.append(System.lineSeparator()).toString();
    }

    /** Appends {@code s} with line breaks, tabs and other control characters as visible escapes. */
    static void appendEscaped(StringBuilder b, String s) {
        if (s == null) {
            b.append("null");
            return;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (Character.isISOControl(c) || c == '\u2028' || c == '\u2029') {
                        b.append(c < 0x100 ? String.format("\\x%02x", (int) c) : String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
    }
}
