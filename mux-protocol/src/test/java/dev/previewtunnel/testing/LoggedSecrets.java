package dev.previewtunnel.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.AppenderBase;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Takes a logger's place while attached (its appenders are set aside, so nothing is printed): every line at INFO
 * and above is counted and checked for the secrets added, and lines carrying one are kept (docs/security.md: no
 * secret in logs).
 */
public final class LoggedSecrets extends AppenderBase<ILoggingEvent> {
    private static final int KEPT = 20;
    private final Set<String> secrets = ConcurrentHashMap.newKeySet();
    private final List<String> leaks = Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong lines = new AtomicLong();
    private final List<Appender<ILoggingEvent>> saved = new ArrayList<>();
    private final Logger logger;
    private final Level savedLevel;
    private final boolean savedAdditive;

    private LoggedSecrets(String loggerName) {
        logger = (Logger) LoggerFactory.getLogger(loggerName);
        savedLevel = logger.getLevel();
        savedAdditive = logger.isAdditive();
    }

    public static LoggedSecrets attach(String loggerName) {
        LoggedSecrets c = new LoggedSecrets(loggerName);
        for (var it = c.logger.iteratorForAppenders(); it.hasNext(); ) {
            c.saved.add(it.next());
        }
        c.saved.forEach(c.logger::detachAppender);
        c.logger.setLevel(Level.INFO);
        c.logger.setAdditive(false);
        c.start();
        c.logger.addAppender(c);
        return c;
    }

    public void detach() {
        logger.detachAppender(this);
        saved.forEach(logger::addAppender);
        logger.setLevel(savedLevel);
        logger.setAdditive(savedAdditive);
        stop();
    }

    /** Adds secrets to look for; empty strings are ignored. */
    public LoggedSecrets watch(Iterable<String> more) {
        more.forEach(s -> {
            if (!s.isEmpty()) {
                secrets.add(s);
            }
        });
        return this;
    }

    public long lines() {
        return lines.get();
    }

    /** The first 20 lines that carried a secret. */
    public List<String> leaks() {
        synchronized (leaks) {
            return List.copyOf(leaks);
        }
    }

    @Override
    protected void append(ILoggingEvent e) {
        lines.incrementAndGet();
        String line = e.getFormattedMessage();
        for (String s : secrets) {
            if (line.contains(s) && leaks.size() < KEPT) {
                leaks.add(line);
            }
        }
    }
}
