package dev.previewtunnel.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.LoggingEvent;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

class MessageLineEncoderTest {
    private final LoggerContext context = new LoggerContext();

    /** The pattern it replaces, in UTF-8, is the oracle: random messages with and without arguments. */
    @Test
    void writesWhatMsgNewlineWroteInUtf8() {
        PatternLayoutEncoder oracle = new PatternLayoutEncoder();
        oracle.setContext(context);
        oracle.setPattern("%msg%n");
        oracle.setCharset(StandardCharsets.UTF_8);
        oracle.start();
        MessageLineEncoder encoder = new MessageLineEncoder();
        encoder.setContext(context);
        encoder.start();
        Random random = new Random(42);
        for (int i = 0; i < 2_000; i++) {
            StringBuilder message = new StringBuilder();
            int length = random.nextInt(40);
            for (int c = 0; c < length; c++) {
                int kind = random.nextInt(6);
                message.appendCodePoint(switch (kind) {
                    case 0 -> 0x20 + random.nextInt(0x5f);
                    case 1 -> '"';
                    case 2 -> 0xa0 + random.nextInt(0x700);
                    case 3 -> 0x1f600 + random.nextInt(0x40);
                    case 4 -> '{';
                    default -> 'a' + random.nextInt(26);
                });
            }
            Object[] args = random.nextBoolean() ? new Object[] {random.nextInt(), "é" + i} : null;
            String text = args == null ? message.toString() : message + " {} and {}";
            LoggingEvent event = new LoggingEvent("x", context.getLogger("ptun.audit"), Level.INFO, text, null, args);
            assertArrayEquals(oracle.encode(event), encoder.encode(event), text);
        }
    }

    @Test
    void noHeaderNorFooterAndOneLinePerEvent() {
        MessageLineEncoder encoder = new MessageLineEncoder();
        assertEquals(0, encoder.headerBytes().length);
        assertEquals(0, encoder.footerBytes().length);
        LoggingEvent event = new LoggingEvent("x", context.getLogger("ptun.audit"), Level.INFO,
                "{\"event\":\"stream_opened\",\"target\":\"höst:5173\"}", null, null);
        assertEquals("{\"event\":\"stream_opened\",\"target\":\"höst:5173\"}" + System.lineSeparator(),
                new String(encoder.encode(event), StandardCharsets.UTF_8));
    }

    /** The pattern appended the throwable's stack trace (logback adds %ex); the audit stream's lines never carry one. */
    @Test
    void aThrowableIsNotWritten() {
        MessageLineEncoder encoder = new MessageLineEncoder();
        LoggingEvent event = new LoggingEvent("x", context.getLogger("ptun.audit"), Level.INFO,
                "{\"event\":\"x\"}", new IllegalStateException("boom"), null);
        assertEquals("{\"event\":\"x\"}" + System.lineSeparator(),
                new String(encoder.encode(event), StandardCharsets.UTF_8));
    }
}
