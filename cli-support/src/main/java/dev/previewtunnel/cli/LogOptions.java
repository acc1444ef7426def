package dev.previewtunnel.cli;

import picocli.CommandLine.Option;

/**
 * {@code --log-format} and {@code --log-level} of the long-running commands, declared once (a picocli mixin); each
 * also a {@code PTUN_*} variable and a config-file key like every setting.
 */
public final class LogOptions {
    @Option(names = "--" + LogFormat.KEY, paramLabel = "FORMAT", converter = LogFormat.Converter.class,
            description = "How the log on stderr is written: text (one line per event, for a person) or json (one "
                    + "JSON object per line, for journald, files and scripts); the audit stream is JSON either "
                    + "way (default: text when stderr is a terminal, else json).")
    LogFormat format;

    @Option(names = "--" + LogLevel.KEY, paramLabel = "LEVEL", converter = LogLevel.Converter.class,
            description = "The least severe log events written: error, warn, info, debug or trace; audit events "
                    + "are written at any level (default: info).")
    LogLevel level;

    /** Applies these options to the log (see {@link ConsoleLogging}); close it when the command ends. */
    public ConsoleLogging apply() {
        return ConsoleLogging.apply(format, level);
    }
}
