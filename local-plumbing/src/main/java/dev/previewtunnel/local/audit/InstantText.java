package dev.previewtunnel.local.audit;

import java.time.Instant;

/**
 * {@link Instant#toString()}'s text, with the date and time of day formatted by the JDK once per second and only
 * the fraction appended per call: the JDK's ISO formatter was the largest C2 compilation of a burst of stream opens
 * on the gateway and a third of the audit line's samples on the C1-only ingress (docs/performance.md, findings 50
 * and 51). The bytes are the JDK's: the fraction in groups of three digits, as many as the nanoseconds need
 * ({@code InstantTextTest} compares them).
 */
final class InstantText {
    /** The last second formatted; immutable, so a racing thread sees either the old or the new one, both right. */
    private record Second(long epochSecond, String dateTime) {
    }

    private static volatile Second last = new Second(Long.MIN_VALUE, "");

    private InstantText() {
    }

    static String now() {
        return of(Instant.now());
    }

    static String of(Instant t) {
        Second s = last;
        if (s.epochSecond != t.getEpochSecond()) {
            String whole = Instant.ofEpochSecond(t.getEpochSecond()).toString(); // no fraction: "...:ssZ"
            s = new Second(t.getEpochSecond(), whole.substring(0, whole.length() - 1));
            last = s;
        }
        int nano = t.getNano();
        StringBuilder b = new StringBuilder(s.dateTime.length() + 11).append(s.dateTime);
        if (nano != 0) {
            b.append('.');
            if (nano % 1_000_000 == 0) {
                digits(b, nano / 1_000_000, 100);
            } else if (nano % 1_000 == 0) {
                digits(b, nano / 1_000, 100_000);
            } else {
                digits(b, nano, 100_000_000);
            }
        }
        return b.append('Z').toString();
    }

    /** {@code value} zero-padded to the width of {@code unit} (its highest digit's place value). */
    private static void digits(StringBuilder b, int value, int unit) {
        for (int u = unit; u > 0; u /= 10) {
            b.append((char) ('0' + value / u % 10));
        }
    }
}
