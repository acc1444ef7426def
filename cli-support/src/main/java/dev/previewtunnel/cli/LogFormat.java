package dev.previewtunnel.cli;

import picocli.CommandLine.ITypeConverter;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * How a long-running command writes its log on stderr ({@code --log-format}, setting {@code log-format}): {@code text}
 * (one line a person reads per event) or {@code json} (one JSON object per line, for journald, files and scripts).
 * Unset, text when stderr is a terminal, JSON otherwise. The audit stream is JSON whatever this says.
 */
public enum LogFormat {
    TEXT, JSON;

    public static final String KEY = "log-format";
    // Terminal devices as /proc/self/fd/2 names them: pseudo-terminals, virtual consoles, serial lines.
    private static final Pattern TERMINAL = Pattern.compile("/dev/(pts/\\d+|tty[A-Za-z0-9]*|console)");

    /** The format when none is set: text if stderr is a terminal (see {@link #forStderr(String, boolean)}). */
    public static LogFormat forStderr() {
        String target;
        try {
            target = Files.readSymbolicLink(Path.of("/proc/self/fd/2")).toString();
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            target = null;
        }
        return forStderr(target, System.console() != null);
    }

    /**
     * The decision, apart from the system: Java 17 cannot ask isatty(2), so stderr counts as a terminal when
     * {@code /proc/self/fd/2} links to a terminal device ({@code stderrLink}); where that link cannot be read
     * (no /proc), when the JVM has a console (stdin and stdout are terminals: an interactive shell's usual case).
     */
    static LogFormat forStderr(String stderrLink, boolean console) {
        boolean terminal = stderrLink != null ? TERMINAL.matcher(stderrLink).matches() : console;
        return terminal ? TEXT : JSON;
    }

    /** {@code text} or {@code json}, any case. */
    public static final class Converter implements ITypeConverter<LogFormat> {
        @Override
        public LogFormat convert(String value) {
            return switch (value.strip().toLowerCase(Locale.ROOT)) {
                case "text" -> TEXT;
                case "json" -> JSON;
                default -> throw new IllegalArgumentException("must be text or json, got '" + Cli.shown(value) + "'");
            };
        }
    }
}
