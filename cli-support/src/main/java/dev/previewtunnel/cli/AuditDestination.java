package dev.previewtunnel.cli;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.FileAppender;
import ch.qos.logback.core.rolling.FixedWindowRollingPolicy;
import ch.qos.logback.core.rolling.RollingFileAppender;
import ch.qos.logback.core.rolling.SizeBasedTriggeringPolicy;
import ch.qos.logback.core.util.FileSize;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * Where the audit stream goes: the {@code audit-file} setting ({@code --audit-file}, {@code PTUN_*_AUDIT_FILE},
 * {@code "audit-file"} in the config file), always one JSON object per line, whatever the log format:
 * <ul>
 *   <li>unset: {@value #DEFAULT_FILE} in the command's state directory, appended, rotated at
 *       {@value #ROTATE_AT_MIB} MiB keeping {@value #KEEP} older files ({@code audit.jsonl.1} newest) so that a
 *       long-lived desktop cannot fill its disk;</li>
 *   <li>{@code -}: stderr, as {@link ProgramLogbackConfigurator} sets it up (interleaved with the log: journald, tests);</li>
 *   <li>a path: that file alone, appended, never rotated (rotate it with logrotate's copytruncate or a restart).</li>
 * </ul>
 * Files are created owner-only (rw-------), rotated ones too; an existing one that group or others can read is
 * refused at startup (the audit log names every session, grant id and target). Where it goes is logged once.
 * {@link #close()} puts the previous appenders back (in-process runs, tests).
 */
public final class AuditDestination implements AutoCloseable {
    public static final String KEY = "audit-file";
    public static final String STDERR = "-";
    public static final String DEFAULT_FILE = "audit.jsonl";
    static final int ROTATE_AT_MIB = 10;
    static final int KEEP = 5;
    private static final org.slf4j.Logger log = LoggerFactory.getLogger(AuditDestination.class);

    private final Logger logger;
    private final List<Appender<ILoggingEvent>> previous;
    private final FileAppender<ILoggingEvent> file;
    private final String where;

    private AuditDestination(Logger logger, List<Appender<ILoggingEvent>> previous, FileAppender<ILoggingEvent> file,
                             String where) {
        this.logger = logger;
        this.previous = previous;
        this.file = file;
        this.where = where;
    }

    /**
     * Applies the setting {@code setting} (as given; null when unset) for {@code loggerName}: to stderr, to the
     * file it names (relative to the config file's directory when it came from there) or to
     * {@value #DEFAULT_FILE} in {@code stateDir} (created rwx------ if missing, refused if untrusted: the checks
     * of {@link StateDirectory}), and logs where.
     * Errors are usage errors naming the setting, or the state directory's own (exit 3). The default file is
     * rotated: the caller holds {@code stateDir}'s {@link StateLock}, so no other process rotates it too.
     */
    public static AuditDestination apply(Settings s, String loggerName, String setting, Path stateDir) {
        return apply(s, loggerName, setting, stateDir, true);
    }

    /**
     * As above; {@code soleWriter} false (a {@code serve} without the state lock, several of which may share the
     * directory) appends to the default file without rotating it: logback's rolling appender rotates by name in one
     * process only, and two rotating processes would shift each other's open files out of the window.
     */
    public static AuditDestination apply(Settings s, String loggerName, String setting, Path stateDir,
            boolean soleWriter) {
        AuditDestination d;
        if (STDERR.equals(setting == null ? null : setting.strip())) {
            d = new AuditDestination(null, List.of(), null, "stderr");
        } else if (setting == null) {
            StateDirectory.ensure(stateDir); // the command's own prepare() warns about loose modes, once
            d = toFile(s, loggerName, stateDir.resolve(DEFAULT_FILE), soleWriter);
        } else {
            Path path;
            try {
                path = s.fromConfigDir(KEY, Path.of(setting.strip()));
            } catch (InvalidPathException e) {
                throw s.invalid(KEY, "is not a valid path: '" + Cli.shown(setting) + "'");
            }
            d = toFile(s, loggerName, path, false);
        }
        log.info("audit events go to {}", d.where);
        return d;
    }

    /** The appender writing the file, or null for stderr (tests). */
    FileAppender<ILoggingEvent> appender() {
        return file;
    }

    /** {@code stderr} or the file's absolute path. */
    public String where() {
        return where;
    }

    private static AuditDestination toFile(Settings s, String loggerName, Path path, boolean rotate) {
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
        MessageLineEncoder encoder = new MessageLineEncoder();
        encoder.setContext(context);
        encoder.start();
        FileAppender<ILoggingEvent> appender = rotate ? rolling(context, path) : new FileAppender<>();
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
        return new AuditDestination(logger, previous, appender, path.toAbsolutePath().toString());
    }

    /** Renames audit.jsonl to audit.jsonl.1 (.1 to .2, ...) past the size; renamed files keep their mode. */
    private static FileAppender<ILoggingEvent> rolling(LoggerContext context, Path path) {
        OwnerOnlyRollingFileAppender appender = new OwnerOnlyRollingFileAppender();
        appender.setContext(context);
        FixedWindowRollingPolicy policy = new FixedWindowRollingPolicy();
        policy.setContext(context);
        policy.setParent(appender);
        policy.setFileNamePattern(path + ".%i");
        policy.setMinIndex(1);
        policy.setMaxIndex(KEEP);
        SizeBasedTriggeringPolicy<ILoggingEvent> trigger = new SizeBasedTriggeringPolicy<>();
        trigger.setContext(context);
        trigger.setMaxFileSize(new FileSize(ROTATE_AT_MIB * FileSize.MB_COEFFICIENT));
        appender.setRollingPolicy(policy);
        appender.setTriggeringPolicy(trigger);
        appender.setFile(path.toString()); // the policy reads the active file's name when it starts
        policy.start();
        trigger.start();
        return appender;
    }

    /**
     * A rolling appender whose new files are owner-only: logback would create them with the process's umask
     * (usually group/other-readable) after each rollover.
     */
    static final class OwnerOnlyRollingFileAppender extends RollingFileAppender<ILoggingEvent> {
        @Override
        public void openFile(String fileName) throws IOException {
            Path p = Path.of(fileName);
            if (p.getFileSystem().supportedFileAttributeViews().contains("posix")) {
                try {
                    Files.createFile(p, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(
                            "rw-------")));
                } catch (FileAlreadyExistsException e) {
                    // the active file, created and checked at startup
                }
            }
            super.openFile(fileName);
        }
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

    /** Routes the audit logger back to its previous appenders and closes the file (nothing for stderr). */
    @Override
    public void close() {
        if (file == null) {
            return;
        }
        previous.forEach(logger::addAppender);
        logger.detachAppender(file);
        file.stop();
    }
}
