package dev.previewtunnel.cli;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.core.read.ListAppender;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.rolling.RollingFileAppender;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The audit stream's destinations: by default audit.jsonl in the state directory (owner-only, appended, rotated
 * into owner-only files), {@code -} stderr as configured, a path that file alone.
 */
class AuditDestinationTest {
    @TempDir
    Path tmp;

    @Command(name = "x")
    static final class X {
        @Option(names = "--audit-file")
        String auditFile;
    }

    private final Settings settings = Settings.load(new CommandLine(new X()).getCommandSpec(), null, "PTUN_TEST_",
            Set.of(AuditDestination.KEY));

    private static Logger logger(String name) {
        return ((LoggerContext) LoggerFactory.getILoggerFactory()).getLogger(name);
    }

    @Test
    void byDefaultAnOwnerOnlyJsonLinesFileInTheStateDirectoryAppendedAcrossRuns() throws Exception {
        Path state = tmp.resolve("state"); // missing: created rwx------
        Logger audit = logger("test.audit.default");
        try (AuditDestination d = AuditDestination.apply(settings, audit.getName(), null, state)) {
            assertEquals(state.resolve("audit.jsonl").toAbsolutePath().toString(), d.where());
            audit.info("{\"event\":\"first\"}");
        }
        try (AuditDestination d = AuditDestination.apply(settings, audit.getName(), null, state)) {
            audit.info("{\"event\":\"second\"}");
        }
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(state)));
        Path file = state.resolve("audit.jsonl");
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertEquals(List.of("{\"event\":\"first\"}", "{\"event\":\"second\"}"), Files.readAllLines(file));
    }

    @Test
    void rotatedAndNewFilesStayOwnerOnly() throws Exception {
        Path state = Files.createDirectory(tmp.resolve("s"));
        Logger audit = logger("test.audit.rotate");
        try (AuditDestination d = AuditDestination.apply(settings, audit.getName(), null, state)) {
            audit.info("{\"event\":\"old\"}");
            // What the size trigger does past 10 MiB; logback alone would create the new file with the umask.
            assertInstanceOf(RollingFileAppender.class, d.appender());
            ((RollingFileAppender<ILoggingEvent>) d.appender()).rollover();
            audit.info("{\"event\":\"new\"}");
        }
        for (String name : List.of("audit.jsonl", "audit.jsonl.1")) {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(state.resolve(name))),
                    name);
        }
        assertEquals(List.of("{\"event\":\"old\"}"), Files.readAllLines(state.resolve("audit.jsonl.1")));
        assertEquals(List.of("{\"event\":\"new\"}"), Files.readAllLines(state.resolve("audit.jsonl")));
    }

    @Test
    void dashKeepsTheConfiguredStderrAppendersAndTouchesNoFile() throws Exception {
        Logger audit = logger("test.audit.stderr");
        ListAppender<ILoggingEvent> configured = new ListAppender<>();
        configured.start();
        audit.addAppender(configured);
        Path state = tmp.resolve("never");
        try (AuditDestination d = AuditDestination.apply(settings, audit.getName(), "-", state)) {
            assertEquals("stderr", d.where());
            assertNull(d.appender());
            audit.info("{\"event\":\"e\"}");
        } finally {
            audit.detachAppender(configured);
        }
        assertEquals(1, configured.list.size());
        assertFalse(Files.exists(state), "no state directory is made for it");
    }

    @Test
    void aPathIsThatFileAloneNotRotatedAndTheOthersComeBackAtClose() throws Exception {
        Logger audit = logger("test.audit.path");
        ListAppender<ILoggingEvent> configured = new ListAppender<>();
        configured.start();
        audit.addAppender(configured);
        Path file = tmp.resolve("mine.log");
        try (AuditDestination d = AuditDestination.apply(settings, audit.getName(), file.toString(), tmp.resolve("s"))) {
            assertEquals(file.toString(), d.where());
            assertFalse(d.appender() instanceof RollingFileAppender, "an explicit file is the user's to rotate");
            audit.info("{\"event\":\"e\"}");
        }
        audit.info("{\"event\":\"after\"}");
        audit.detachAppender(configured);
        assertEquals(List.of("{\"event\":\"e\"}"), Files.readAllLines(file));
        assertEquals(1, configured.list.size(), "only the event after close went to the configured appender");
        assertFalse(Files.exists(tmp.resolve("s")));
    }

    @Test
    void aDefaultFileOthersCanReadIsRefused() throws Exception {
        Path state = Files.createDirectory(tmp.resolve("s"), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwx------")));
        Path file = Files.writeString(state.resolve("audit.jsonl"), "");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        RuntimeException e = assertThrows(RuntimeException.class,
                () -> AuditDestination.apply(settings, "test.audit.loose", null, state));
        assertTrue(e.getMessage().contains(file + " is accessible by group/others (rw-r--r--)")
                && e.getMessage().contains("chmod 600 " + file), e.getMessage());
    }
}
