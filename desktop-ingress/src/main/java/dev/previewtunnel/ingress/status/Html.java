package dev.previewtunnel.ingress.status;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/** Escaping for the ingress's own pages: every value that is not a constant goes through {@link #escape}. */
public final class Html {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss 'UTC'")
            .withZone(ZoneOffset.UTC);

    private Html() {
    }

    /** A time of day as the pages show it. */
    public static String time(Instant at) {
        return TIME.format(at);
    }

    /** Text or a double- or single-quoted attribute value; control characters but newline become spaces. */
    public static String escape(String s) {
        if (s == null) {
            return "";
        }
        StringBuilder b = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c < 0x20 && c != '\n' ? ' ' : c);
            }
        }
        return b.toString();
    }
}
