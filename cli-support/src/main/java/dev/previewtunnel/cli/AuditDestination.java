package dev.previewtunnel.cli;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.FileAppender;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * Where the audit stream goes: the {@code audit-file} setting ({@code --audit-file}, {@code PTUN_*_AUDIT_FILE},
 * {@code "audit-file"} in the config file). Unset, the audit logger writes to stderr as each program's logback.xml
 * says; set, it is routed to that file alone, one JSON object per line, appended. The file is created owner-only
 * (rw-------); an existing one that group or others can read is refused at startup (the audit log names every
 * session, grant id and target). {@link #close()} puts the previous appenders back (in-process runs, tests).
 */
public final class AuditDestination implements AutoCloseable {
    public static final String KEY = "audit-file";

    private final Logger logger;
    private final List<Appender<ILoggingEvent>> previous;
    private final FileAppender<ILoggingEvent> file;

    private AuditDestination(Logger logger, List<Appender<ILoggingEvent>> previous, FileAppender<ILoggingEvent> file) {
        this.logger = logger;
        this.previous = previous;
        this.file = file;
    }

    /**
     * Applies the setting: returns null when {@code path} is null (stderr), else routes {@code loggerName} to the
     * file. Errors are usage errors naming the setting.
     */
    public static AuditDestination apply(Settings s, String loggerName, Path path) {
        if (path == null) {
            return null;
        }
        Path parent = path.toAbsolutePath().getParent();
        if (parent == null || !Files.isDirectory(parent)) {
            throw s.invalid(KEY, "the directory of " + path + " does not exist");
        }
        if (Files.isDirectory(path)) {
            throw s.invalid(KEY, path + " is a directory, give a file");
        }
        createOwnerOnly(s, path);
        if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext context)) {
            throw new IllegalStateException("audit-file needs logback as the SLF4J binding");
        }
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(context);
        encoder.setPattern("%msg%n");
        encoder.start();
        FileAppender<ILoggingEvent> appender = new FileAppender<>();
        appender.setContext(context);
        appender.setName("AUDIT_FILE");
        appender.setFile(path.toString());
        appender.setAppend(true);
        appender.setImmediateFlush(true);
        appender.setEncoder(encoder);
        appender.start();
        if (!appender.isStarted()) {
            throw s.invalid(KEY, "cannot open " + path + " for appending");
        }
        Logger logger = context.getLogger(loggerName);
        List<Appender<ILoggingEvent>> previous = new ArrayList<>();
        for (Iterator<Appender<ILoggingEvent>> it = logger.iteratorForAppenders(); it.hasNext(); ) {
            previous.add(it.next());
        }
        // Add first, then detach: an event logged meanwhile goes to the file (possibly also to stderr), never
        // nowhere. Detached appenders are not stopped: close() puts them back.
        logger.addAppender(appender);
        previous.forEach(logger::detachAppender);
        logger.setAdditive(false);
        return new AuditDestination(logger, previous, appender);
    }

    private static void createOwnerOnly(Settings s, Path path) {
        boolean posix = path.getFileSystem().supportedFileAttributeViews().contains("posix");
        try {
            if (posix) {
                Files.createFile(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            } else {
                Files.createFile(path);
            }
            return;
        } catch (FileAlreadyExistsException exists) {
            // checked below
        } catch (IOException e) {
            throw s.invalid(KEY, "cannot create " + path + " (" + e.getClass().getSimpleName() + ")");
        }
        if (posix) {
            try {
                Set<PosixFilePermission> perms = Files.getPosixFilePermissions(path);
                if (perms.stream().anyMatch(p -> !p.name().startsWith("OWNER_"))) {
                    throw s.invalid(KEY, path + " is accessible by group/others ("
                            + PosixFilePermissions.toString(perms) + "); the audit log names sessions, grant ids "
                            + "and targets: chmod 600 " + path);
                }
            } catch (IOException e) {
                throw s.invalid(KEY, "cannot read the permissions of " + path + " (" + e.getClass().getSimpleName()
                        + ")");
            }
        }
    }

    /** Routes the audit logger back to its previous appenders and closes the file. */
    @Override
    public void close() {
        previous.forEach(logger::addAppender);
        logger.detachAppender(file);
        file.stop();
    }
}
