package dev.previewtunnel.cli;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** picocli converters that report bad values as one readable line. */
public final class Converters {
    // Lower-case units only: "5M" could mean minutes or months, so it is refused rather than guessed.
    private static final Pattern SHORT_DURATION = Pattern.compile("(\\d{1,9})([smhd])");

    private Converters() {
    }

    /**
     * "90s", "5m", "2h", "1d", or ISO-8601 such as "PT5M".
     *
     * @return a positive duration
     * @throws IllegalArgumentException if the text is not one of the accepted forms or not positive
     */
    public static Duration parseDuration(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("duration is empty; use e.g. 90s, 5m, 2h, 1d or PT5M");
        }
        String t = text.trim();
        Duration d;
        Matcher m = SHORT_DURATION.matcher(t);
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            d = switch (m.group(2)) {
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            };
        } else if (t.startsWith("P") || t.startsWith("p")) {
            try {
                d = Duration.parse(t);
            } catch (DateTimeParseException e) {
                throw invalidDuration(t);
            }
        } else {
            throw invalidDuration(t);
        }
        if (d.isZero() || d.isNegative()) {
            throw new IllegalArgumentException("duration must be positive: '" + t + "'");
        }
        return d;
    }

    private static IllegalArgumentException invalidDuration(String t) {
        String shown = t.length() > 32 ? t.substring(0, 32) + "..." : t;
        return new IllegalArgumentException(
                "invalid duration '" + shown + "'; use e.g. 90s, 5m, 2h, 1d or ISO-8601 like PT5M");
    }

    /** "90s", "5m", "2h", "1d" or ISO-8601 ("PT5M"); see {@link #parseDuration}. */
    public static final class DurationConverter implements ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            try {
                return parseDuration(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    /**
     * {@code HOST:PORT} or {@code [V6]:PORT}, port 0 allowed; syntax only, nothing is resolved (see
     * {@link ListenAddress}). Commands that must report a bad value exactly like {@code env-gateway serve} does
     * parse in their {@code call()} with {@link Cli#parseListen} instead.
     */
    public static final class ListenAddressConverter implements ITypeConverter<ListenAddress> {
        @Override
        public ListenAddress convert(String value) {
            try {
                return ListenAddress.parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException("must be HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:8080), got '"
                        + Cli.shown(value) + "': " + e.getMessage());
            }
        }
    }
}
