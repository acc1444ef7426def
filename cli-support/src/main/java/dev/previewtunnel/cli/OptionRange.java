package dev.previewtunnel.cli;

import dev.previewtunnel.mux.wire.SettingRange;

import java.time.Duration;

/**
 * An option's value checked against the range its model declares ({@link SettingRange}: the mux settings, the
 * local endpoints' limits), so that each range is written once, where the value is modelled; a value outside is
 * the usage error naming the option and where its value came from.
 */
public final class OptionRange {
    private OptionRange() {
    }

    /**
     * {@code value} when {@code range} holds it, else a usage error (exit 1):
     * {@code --stream-window must be at most 1GiB, got 2GiB}, or
     * {@code max-websocket-message (from PTUN_GATEWAY_MAX_WEBSOCKET_MESSAGE) must be at least 16KiB, got 8KiB}.
     * Bounds of type Long are byte counts (shown as sizes), Integer plain numbers, Duration durations.
     */
    public static <T extends Comparable<T>> T check(Settings s, String key, SettingRange<T> range, T value) {
        try {
            return range.check(value);
        } catch (SettingRange.OutOfRange e) {
            throw s.invalid(key, "must be " + (e.tooLow() ? "at least " + shown(range.min())
                    : "at most " + shown(range.max())) + ", got " + shown(value));
        }
    }

    private static String shown(Object value) {
        if (value instanceof Duration d) {
            return Cli.human(d);
        }
        return value instanceof Long bytes ? Converters.humanSize(bytes) : String.valueOf(value);
    }
}
