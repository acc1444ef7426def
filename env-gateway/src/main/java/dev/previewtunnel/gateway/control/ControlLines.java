package dev.previewtunnel.gateway.control;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;

/**
 * Splits the control input into lines of at most {@code maxBytes} bytes (the terminator, LF or CRLF, not counted).
 * A longer line is not kept: its bytes are skipped up to the next LF and it comes back as {@link Line#overlong()},
 * so a peer cannot make the gateway buffer more than {@code maxBytes} per request.
 */
final class ControlLines {
    /** One line's bytes, or none when it was longer than the limit. */
    record Line(byte[] bytes, boolean overlong) {
    }

    private final InputStream in;
    private final int maxBytes;
    private final byte[] buffer = new byte[8192];
    private int position;
    private int limit;

    ControlLines(InputStream in, int maxBytes) {
        this.in = in;
        this.maxBytes = maxBytes;
    }

    /** The next line, or null at the end of input; a last line without LF still counts as a line. */
    Line next() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        boolean overlong = false;
        boolean any = false;
        while (true) {
            if (position == limit) {
                limit = in.read(buffer);
                position = 0;
                if (limit < 0) {
                    limit = 0;
                    return any ? finish(line, overlong) : null;
                }
                continue;
            }
            any = true;
            int start = position;
            while (position < limit && buffer[position] != '\n') {
                position++;
            }
            boolean ended = position < limit;
            if (!overlong) {
                line.write(buffer, start, position - start);
                // One byte of slack for the CR of a CRLF terminator.
                overlong = line.size() > maxBytes + 1;
                if (overlong) {
                    line.reset();
                }
            }
            if (ended) {
                position++; // the LF
                return finish(line, overlong);
            }
        }
    }

    private Line finish(ByteArrayOutputStream line, boolean overlong) {
        if (overlong) {
            return new Line(new byte[0], true);
        }
        byte[] bytes = line.toByteArray();
        int length = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
        if (length > maxBytes) {
            return new Line(new byte[0], true);
        }
        return new Line(length == bytes.length ? bytes : Arrays.copyOf(bytes, length), false);
    }
}
