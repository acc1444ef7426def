package dev.previewtunnel.cli;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.encoder.EncoderBase;

import java.nio.charset.StandardCharsets;

/**
 * An event's formatted message and a line separator, in UTF-8: the audit stream's encoder (each audit message is
 * already one JSON object). What the pattern {@code %msg%n} wrote, without a PatternLayout, whose converter table
 * loads ~70 classes of logback's pattern machinery into every program at start (docs/performance.md, finding 42),
 * and in UTF-8 whatever the platform's default charset (JDK 17's follows the locale). Never a stack trace: the
 * pattern added one for an event with a throwable, which would break the one-object-per-line stream.
 */
public final class MessageLineEncoder extends EncoderBase<ILoggingEvent> {
    private static final byte[] NO_BYTES = new byte[0];

    @Override
    public byte[] headerBytes() {
        return NO_BYTES;
    }

    @Override
    public byte[] encode(ILoggingEvent event) {
        return (event.getFormattedMessage() + System.lineSeparator()).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public byte[] footerBytes() {
        return NO_BYTES;
    }
}
