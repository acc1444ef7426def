package dev.previewtunnel.gateway.control;

import dev.previewtunnel.gateway.control.ControlLines.Line;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Line splitting with a bound: LF or CRLF, a last line without LF, an overlong line skipped to its LF. */
class ControlLinesTest {

    private static List<String> lines(InputStream in, int max) throws IOException {
        ControlLines lines = new ControlLines(in, max);
        List<String> out = new ArrayList<>();
        for (Line line; (line = lines.next()) != null; ) {
            out.add(line.overlong() ? "<overlong>" : new String(line.bytes(), StandardCharsets.UTF_8));
        }
        return out;
    }

    private static List<String> lines(String text, int max) throws IOException {
        return lines(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), max);
    }

    @Test
    void splitsOnLfAndDropsACrBeforeIt() throws IOException {
        assertEquals(List.of("a", "", "b\rc", "d", "last"), lines("a\n\nb\rc\nd\r\nlast", 16));
        assertEquals(List.of(), lines("", 16));
        assertEquals(List.of(""), lines("\n", 16));
    }

    @Test
    void aLineOverTheLimitIsSkippedToItsEndAndTheNextOneRead() throws IOException {
        String exact = "x".repeat(10);
        assertEquals(List.of(exact, exact, "<overlong>", "<overlong>", "ok", "<overlong>"),
                lines(exact + "\n" + exact + "\r\n" + exact + "y\n" + exact + "yz\r\nok\n" + "z".repeat(11), 10));
    }

    @Test
    void aHugeLineIsSkippedAndTheNextOneRead() throws IOException {
        InputStream huge = new InputStream() {
            long left = 8L * 1024 * 1024;

            @Override
            public int read() {
                return left-- > 0 ? 'a' : -1;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (left <= 0) {
                    return -1;
                }
                int n = (int) Math.min(len, left);
                java.util.Arrays.fill(b, off, off + n, (byte) 'a');
                left -= n;
                return n;
            }
        };
        InputStream in = new SequenceInputStream(huge, new ByteArrayInputStream("\nok\n".getBytes(StandardCharsets.UTF_8)));
        assertEquals(List.of("<overlong>", "ok"), lines(in, 64 * 1024));
    }

    @Test
    void bytesAreKeptAsTheyCame() throws IOException {
        byte[] raw = {(byte) 0xC3, (byte) 0x28, '\n'};
        Line line = new ControlLines(new ByteArrayInputStream(raw), 16).next();
        assertEquals(2, line.bytes().length);
        assertEquals((byte) 0xC3, line.bytes()[0]);
    }
}
