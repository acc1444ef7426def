package dev.previewtunnel.cli;

import dev.previewtunnel.local.net.ListenAddress;
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
    // Binary units only, spelled out: "64K" or "64KB" could mean 64,000 or 65,536 bytes, so they are refused.
    private static final Pattern SIZE = Pattern.compile("(\\d{1,12})\\s*(|B|KiB|MiB|GiB)");

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

    /**
     * A byte count: {@code 65536}, {@code 64KiB}, {@code 1MiB}, {@code 2GiB} (binary units, spelled out).
     *
     * @return a positive number of bytes
     * @throws IllegalArgumentException with a one-line reason for anything else
     */
    public static long parseSize(String text) {
        String t = text == null ? "" : text.strip();
        Matcher m = SIZE.matcher(t);
        if (!m.matches()) {
            throw new IllegalArgumentException("invalid size '" + Cli.shown(t) + "'; use bytes or KiB/MiB/GiB, "
                    + "e.g. 65536, 64KiB or 1MiB (K, KB and MB are refused: decimal or binary?)");
        }
        long n = Long.parseLong(m.group(1));
        long unit = switch (m.group(2)) {
            case "KiB" -> 1L << 10;
            case "MiB" -> 1L << 20;
            case "GiB" -> 1L << 30;
            default -> 1;
        };
        if (n == 0) {
            throw new IllegalArgumentException("size must be positive: '" + t + "'");
        }
        if (n > Long.MAX_VALUE / unit) {
            throw new IllegalArgumentException("size is too large: '" + Cli.shown(t) + "'");
        }
        return n * unit;
    }

    /** 262144 -> "256KiB", 1048576 -> "1MiB", 1000 -> "1000" (bytes): the form {@link #parseSize} reads back. */
    public static String humanSize(long bytes) {
        if (bytes > 0 && bytes % (1L << 30) == 0) {
            return bytes / (1L << 30) + "GiB";
        }
        if (bytes > 0 && bytes % (1L << 20) == 0) {
            return bytes / (1L << 20) + "MiB";
        }
        if (bytes > 0 && bytes % (1L << 10) == 0) {
            return bytes / (1L << 10) + "KiB";
        }
        return Long.toString(bytes);
    }

    /** A byte count, see {@link #parseSize}. */
    public static final class SizeConverter implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                return parseSize(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    /**
     * A positive decimal number such as {@code 200} or {@code 0.5}.
     *
     * @throws IllegalArgumentException for anything else (including NaN, infinity and exponents)
     */
    public static double parseRate(String text) {
        String t = text == null ? "" : text.strip();
        if (!t.matches("\\d{1,9}(\\.\\d{1,6})?")) {
            throw new IllegalArgumentException("must be a positive number such as 200 or 0.5, got '"
                    + Cli.shown(t) + "'");
        }
        double v = Double.parseDouble(t);
        if (v <= 0) {
            throw new IllegalArgumentException("must be positive, got '" + t + "'");
        }
        return v;
    }

    /** A positive decimal number, see {@link #parseRate}. */
    public static final class RateConverter implements ITypeConverter<Double> {
        @Override
        public Double convert(String value) {
            try {
                return parseRate(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
