package dev.previewtunnel.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.OutputStreamAppender;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * The programmatic configuration is the one the programs' logback.xml gave (the XML below, as both programs shipped
 * it before start-up time made it code): same appenders by name, class and stream, same encoded bytes for the
 * same events, same levels and additivity. One difference on purpose: the audit appender's {@code %msg%n} pattern
 * became {@link MessageLineEncoder} (finding 42), which writes no stack trace (the pattern added one to an event
 * carrying a throwable: logback appends {@code %ex} to a pattern without one); audit events carry none.
 */
class ProgramLogbackConfiguratorTest {
    private static final String FORMER_XML = """
            <configuration>
              <appender name="STDERR_JSON" class="ch.qos.logback.core.ConsoleAppender">
                <target>System.err</target>
                <encoder class="ch.qos.logback.classic.encoder.JsonEncoder">
                  <withSequenceNumber>false</withSequenceNumber>
                  <withNanoseconds>false</withNanoseconds>
                  <withContext>false</withContext>
                  <withMDC>false</withMDC>
                  <withMarkers>false</withMarkers>
                  <withMessage>false</withMessage>
                  <withArguments>false</withArguments>
                  <withFormattedMessage>true</withFormattedMessage>
                  <withKVPList>true</withKVPList>
                  <withThrowable>true</withThrowable>
                </encoder>
              </appender>
              <appender name="AUDIT" class="ch.qos.logback.core.ConsoleAppender">
                <target>System.err</target>
                <encoder><pattern>%msg%n</pattern></encoder>
              </appender>
              <logger name="ptun.audit" level="INFO" additivity="false"><appender-ref ref="AUDIT"/></logger>
              <logger name="io.netty" level="WARN"/>
              <root level="INFO"><appender-ref ref="STDERR_JSON"/></root>
            </configuration>
            """;

    @Test
    void buildsWhatTheFormerXmlGave() throws Exception {
        LoggerContext fromXml = new LoggerContext();
        JoranConfigurator joran = new JoranConfigurator();
        joran.setContext(fromXml);
        joran.doConfigure(new ByteArrayInputStream(FORMER_XML.getBytes(StandardCharsets.UTF_8)));

        LoggerContext fromCode = new LoggerContext();
        ProgramLogbackConfigurator configurator = new ProgramLogbackConfigurator();
        configurator.setContext(fromCode);
        assertEquals(Configurator.ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY, configurator.configure(fromCode));

        for (String name : List.of(org.slf4j.Logger.ROOT_LOGGER_NAME, "ptun.audit", "io.netty", "dev.previewtunnel")) {
            Logger expected = fromXml.getLogger(name);
            Logger actual = fromCode.getLogger(name);
            assertEquals(expected.getLevel(), actual.getLevel(), name + " level");
            assertEquals(expected.getEffectiveLevel(), actual.getEffectiveLevel(), name + " effective level");
            assertEquals(expected.isAdditive(), actual.isAdditive(), name + " additivity");
            boolean audit = name.equals(ProgramLogbackConfigurator.AUDIT_LOGGER);
            assertEquals(describe(expected).stream().map(a -> audit ? a.replace(
                    PatternLayoutEncoder.class.getName(), MessageLineEncoder.class.getName()) : a).toList(),
                    describe(actual), name + " appenders");
            LoggingEvent event = new LoggingEvent(ProgramLogbackConfiguratorTest.class.getName(), actual, Level.WARN,
                    "listening on {}", audit ? null : new IllegalStateException("boom"),
                    new Object[] {"127.0.0.1:8080"});
            event.addKeyValuePair(new org.slf4j.event.KeyValuePair("port", 8080));
            assertEquals(encoded(expected, event), encoded(actual, event), name + " encoding");
        }
        assertNotNull(fromCode.getLogger("ptun.audit").getAppender(ProgramLogbackConfigurator.AUDIT));
        assertNotNull(fromCode.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).getAppender(ProgramLogbackConfigurator.CONSOLE));
        fromXml.stop();
        fromCode.stop();
    }

    @Test
    void isWhatTheProgramsGetWithoutAConfigurationFile() {
        // This module's test class path has no logback-test.xml: logback found the configurator as a service.
        LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
        assertNotNull(context.getLogger("ptun.audit").getAppender(ProgramLogbackConfigurator.AUDIT));
        assertEquals(Level.WARN, context.getLogger("io.netty").getLevel());
    }

    @Test
    void stepsAsideForAConfigurationFile() {
        String previous = System.setProperty("logback.configurationFile", "somewhere/logback.xml");
        try {
            LoggerContext context = new LoggerContext();
            ProgramLogbackConfigurator configurator = new ProgramLogbackConfigurator();
            configurator.setContext(context);
            assertEquals(Configurator.ExecutionStatus.INVOKE_NEXT_IF_ANY, configurator.configure(context));
            assertFalse(context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).iteratorForAppenders().hasNext());
        } finally {
            if (previous == null) {
                System.clearProperty("logback.configurationFile");
            } else {
                System.setProperty("logback.configurationFile", previous);
            }
        }
    }

    private static List<String> describe(Logger logger) {
        List<String> out = new ArrayList<>();
        for (Iterator<Appender<ILoggingEvent>> it = logger.iteratorForAppenders(); it.hasNext(); ) {
            Appender<ILoggingEvent> a = it.next();
            String target = a instanceof ConsoleAppender<ILoggingEvent> c ? c.getTarget() : "-";
            String encoder = a instanceof OutputStreamAppender<ILoggingEvent> o ? o.getEncoder().getClass().getName() : "-";
            out.add(a.getName() + " " + a.getClass().getName() + " " + target + " " + encoder + " " + a.isStarted());
        }
        return out;
    }

    /** What the logger's own appenders (not the inherited ones) encode for the event. */
    private static List<String> encoded(Logger logger, ILoggingEvent event) {
        List<String> out = new ArrayList<>();
        for (Iterator<Appender<ILoggingEvent>> it = logger.iteratorForAppenders(); it.hasNext(); ) {
            if (it.next() instanceof OutputStreamAppender<ILoggingEvent> o) {
                out.add(new String(o.getEncoder().encode(event), StandardCharsets.UTF_8));
            }
        }
        return out;
    }
}
