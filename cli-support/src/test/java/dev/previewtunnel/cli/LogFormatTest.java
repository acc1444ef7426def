package dev.previewtunnel.cli;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The default log format follows what stderr is; the settings' values parse with readable refusals. */
class LogFormatTest {
    @Test
    void textOnlyWhenStderrIsATerminalDevice() {
        for (String tty : new String[]{"/dev/pts/0", "/dev/pts/17", "/dev/tty", "/dev/tty2", "/dev/ttyS0",
                "/dev/console"}) {
            assertEquals(LogFormat.TEXT, LogFormat.forStderr(tty, false), tty);
        }
        // Redirected to a file, a pipe, journald's socket, /dev/null: JSON, whatever the console says.
        for (String other : new String[]{"/home/u/ptun.log", "pipe:[12345]", "socket:[99]", "/dev/null",
                "/dev/pts/", "/dev/pts/1/../x", "/tmp/dev/pts/1", "anon_inode:[eventfd]"}) {
            assertEquals(LogFormat.JSON, LogFormat.forStderr(other, true), other);
        }
    }

    @Test
    void withoutProcTheConsoleDecides() {
        assertEquals(LogFormat.TEXT, LogFormat.forStderr(null, true));
        assertEquals(LogFormat.JSON, LogFormat.forStderr(null, false));
    }

    @Test
    void inThisTestRunStderrIsNoTerminal() {
        // Surefire pipes the forked JVM's stderr: the default must be JSON here, as under systemd or in CI.
        assertEquals(LogFormat.JSON, LogFormat.forStderr());
    }

    @Test
    void valuesParseInAnyCaseAndOthersAreRefusedByName() throws Exception {
        assertEquals(LogFormat.TEXT, new LogFormat.Converter().convert("Text"));
        assertEquals(LogFormat.JSON, new LogFormat.Converter().convert(" json "));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new LogFormat.Converter().convert("yaml"));
        assertEquals("must be text or json, got 'yaml'", e.getMessage());
        assertEquals(LogLevel.DEBUG, new LogLevel.Converter().convert("debug"));
        assertEquals(LogLevel.WARN, new LogLevel.Converter().convert("WARN"));
        e = assertThrows(IllegalArgumentException.class, () -> new LogLevel.Converter().convert("verbose"));
        assertTrue(e.getMessage().startsWith("must be error, warn, info, debug or trace"), e.getMessage());
    }
}
