package dev.previewtunnel.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.ConsoleAppender;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** --log-format text swaps the root's console appenders for text ones; --log-level sets the root level; close undoes. */
class ConsoleLoggingTest {
    @Test
    void textFormatAndLevelApplyToTheRootAndAreUndone() {
        LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        Level before = root.getLevel();
        List<Appender<ILoggingEvent>> saved = new ArrayList<>();
        root.iteratorForAppenders().forEachRemaining(saved::add);
        saved.forEach(root::detachAppender);
        ConsoleAppender<ILoggingEvent> json = new ConsoleAppender<>();
        json.setContext(context);
        json.setTarget("System.err");
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(context);
        encoder.setPattern("{\"message\":\"%msg\"}%n");
        encoder.start();
        json.setEncoder(encoder);
        json.start();
        root.addAppender(json);
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            org.slf4j.Logger log = LoggerFactory.getLogger("dev.previewtunnel.x.RunCommand");
            try (ConsoleLogging logging = ConsoleLogging.apply(LogFormat.TEXT, LogLevel.WARN)) {
                assertEquals(LogFormat.TEXT, logging.format());
                log.info("not written at warn");
                log.atWarn().setMessage("proxy {} slow").addArgument("127.0.0.1:1").addKeyValue("event", "slow").log();
                logging.plainLine("chromium --proxy-server=http://127.0.0.1:1");
            }
            log.warn("after close");
            try (ConsoleLogging logging = ConsoleLogging.apply(LogFormat.JSON, null)) {
                logging.plainLine("never in json");
            }
        } finally {
            System.setErr(err);
            root.detachAppender(json);
            saved.forEach(root::addAppender);
            root.setLevel(before);
        }
        String[] lines = captured.toString(StandardCharsets.UTF_8).split("\\R");
        assertEquals(3, lines.length, String.join("\n", lines));
        assertTrue(lines[0].matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} WARN  RunCommand: proxy 127\\.0\\.0\\.1:1 slow "
                + "event=slow"), lines[0]);
        assertEquals("chromium --proxy-server=http://127.0.0.1:1", lines[1]);
        assertEquals("{\"message\":\"after close\"}", lines[2]);
        assertFalse(String.join("\n", lines).contains("not written"));
    }
}
