package dev.previewtunnel.cli;

import ch.qos.logback.classic.Level;
import picocli.CommandLine.ITypeConverter;

import java.util.Locale;

/**
 * The least severe application log events a long-running command writes ({@code --log-level}, setting
 * {@code log-level}). The audit stream is not an application log: every audit event is written at any level.
 */
public enum LogLevel {
    ERROR(Level.ERROR), WARN(Level.WARN), INFO(Level.INFO), DEBUG(Level.DEBUG), TRACE(Level.TRACE);

    public static final String KEY = "log-level";

    private final Level logback;

    LogLevel(Level logback) {
        this.logback = logback;
    }

    Level logback() {
        return logback;
    }

    /** error, warn, info, debug or trace, any case. */
    public static final class Converter implements ITypeConverter<LogLevel> {
        @Override
        public LogLevel convert(String value) {
            String v = value.strip().toUpperCase(Locale.ROOT);
            for (LogLevel l : values()) {
                if (l.name().equals(v)) {
                    return l;
                }
            }
            throw new IllegalArgumentException("must be error, warn, info, debug or trace, got '"
                    + Cli.shown(value) + "'");
        }
    }
}
