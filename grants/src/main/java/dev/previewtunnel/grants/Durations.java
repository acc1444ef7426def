package dev.previewtunnel.grants;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses the CLI's {@code --ttl}: "90s", "5m", "2h", "1d", or ISO-8601 such as "PT5M". */
public final class Durations {
    // Lower-case units only: "5M" could mean minutes or months, so it is refused rather than guessed.
    private static final Pattern SHORT = Pattern.compile("(\\d{1,9})([smhd])");

    private Durations() {
    }

    /**
     * @return a positive duration
     * @throws IllegalArgumentException if the text is not one of the accepted forms or not positive
     */
    public static Duration parse(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("duration is empty; use e.g. 90s, 5m, 2h, 1d or PT5M");
        }
        String t = text.trim();
        Duration d;
        Matcher m = SHORT.matcher(t);
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
                throw invalid(t);
            }
        } else {
            throw invalid(t);
        }
        if (d.isZero() || d.isNegative()) {
            throw new IllegalArgumentException("duration must be positive: '" + t + "'");
        }
        return d;
    }

    private static IllegalArgumentException invalid(String t) {
        String shown = t.length() > 32 ? t.substring(0, 32) + "..." : t;
        return new IllegalArgumentException(
                "invalid duration '" + shown + "'; use e.g. 90s, 5m, 2h, 1d or ISO-8601 like PT5M");
    }
}
