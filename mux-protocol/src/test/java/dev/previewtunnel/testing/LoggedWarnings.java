package dev.previewtunnel.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** Keeps every warning or error logged while attached to the root logger (Netty's leak reports are errors). */
public final class LoggedWarnings extends AppenderBase<ILoggingEvent> {
    private static final int KEPT = 50;
    private final List<String> seen = Collections.synchronizedList(new ArrayList<>());

    public static LoggedWarnings attach() {
        LoggedWarnings w = new LoggedWarnings();
        w.start();
        root().addAppender(w);
        return w;
    }

    public void detach() {
        root().detachAppender(this);
        stop();
    }

    /** The first 50 warnings and errors, each as {@code logger: message (exception: message)}. */
    public List<String> seen() {
        synchronized (seen) {
            return List.copyOf(seen);
        }
    }

    @Override
    protected void append(ILoggingEvent e) {
        if (e.getLevel().isGreaterOrEqual(Level.WARN) && seen.size() < KEPT) {
            seen.add(e.getLoggerName() + ": " + e.getFormattedMessage() + (e.getThrowableProxy() == null ? ""
                    : " (" + e.getThrowableProxy().getClassName() + ": " + e.getThrowableProxy().getMessage() + ")"));
        }
    }

    private static Logger root() {
        return (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    }
}
