package dev.previewtunnel.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.encoder.LayoutWrappingEncoder;
import org.slf4j.LoggerFactory;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The application log of a running command as {@code --log-format} and {@code --log-level} say. The programs'
 * logging ({@link ProgramLogbackConfigurator}) writes JSON on stderr (so an embedding that never runs a command is unchanged); for {@code text}
 * each console appender of the root logger is swapped for one with {@link TextLogLayout} on the same stream, and
 * a level sets the root logger's. The audit logger has appenders and a level of its own and is left alone.
 * {@link #close()} puts the previous appenders and level back (in-process runs, tests).
 */
public final class ConsoleLogging implements AutoCloseable {
    private final LogFormat format;
    private final Logger root;
    private final Level previousLevel;
    private final List<Appender<ILoggingEvent>> replaced;
    private final List<Appender<ILoggingEvent>> added;

    private ConsoleLogging(LogFormat format, Logger root, Level previousLevel,
                           List<Appender<ILoggingEvent>> replaced, List<Appender<ILoggingEvent>> added) {
        this.format = format;
        this.root = root;
        this.previousLevel = previousLevel;
        this.replaced = replaced;
        this.added = added;
    }

    /** Applies {@code format} (null: {@link LogFormat#forStderr()}) and {@code level} (null: as configured). */
    public static ConsoleLogging apply(LogFormat format, LogLevel level) {
        LogFormat effective = format != null ? format : LogFormat.forStderr();
        if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext context)) {
            return new ConsoleLogging(effective, null, null, List.of(), List.of());
        }
        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        Level previousLevel = root.getLevel();
        List<Appender<ILoggingEvent>> replaced = new ArrayList<>();
        List<Appender<ILoggingEvent>> added = new ArrayList<>();
        if (effective == LogFormat.TEXT) {
            for (Iterator<Appender<ILoggingEvent>> it = root.iteratorForAppenders(); it.hasNext(); ) {
                if (it.next() instanceof ConsoleAppender<ILoggingEvent> console) {
                    replaced.add(console);
                }
            }
            for (Appender<ILoggingEvent> old : replaced) {
                ConsoleAppender<ILoggingEvent> text = textAppender(context, ((ConsoleAppender<ILoggingEvent>) old)
                        .getTarget());
                // Added before the old one goes: an event logged meanwhile is written (maybe twice), never lost.
                root.addAppender(text);
                root.detachAppender(old);
                added.add(text);
            }
        }
        if (level != null) {
            root.setLevel(level.logback());
        }
        return new ConsoleLogging(effective, root, previousLevel, replaced, added);
    }

    private static ConsoleAppender<ILoggingEvent> textAppender(LoggerContext context, String target) {
        TextLogLayout layout = new TextLogLayout();
        layout.setContext(context);
        layout.start();
        LayoutWrappingEncoder<ILoggingEvent> encoder = new LayoutWrappingEncoder<>();
        encoder.setContext(context);
        encoder.setLayout(layout);
        encoder.start();
        ConsoleAppender<ILoggingEvent> appender = new ConsoleAppender<>();
        appender.setContext(context);
        appender.setName("STDERR_TEXT");
        appender.setTarget(target);
        appender.setEncoder(encoder);
        appender.start();
        return appender;
    }

    /** The format in effect. */
    public LogFormat format() {
        return format;
    }

    /**
     * In text mode, writes {@code line} on stderr as it is, without time or level: a command a person copies
     * (the browser command of the ready hint). Nothing in JSON mode, where the log event carries it.
     */
    public void plainLine(String line) {
        if (format == LogFormat.TEXT) {
            PrintStream err = System.err;
            err.println(line);
            err.flush();
        }
    }

    @Override
    public void close() {
        if (root == null) {
            return;
        }
        replaced.forEach(root::addAppender);
        for (Appender<ILoggingEvent> a : added) {
            root.detachAppender(a);
            a.stop();
        }
        root.setLevel(previousLevel);
    }
}
