package dev.previewtunnel.cli;

import ch.qos.logback.classic.ClassicConstants;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ConfiguratorRank;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.encoder.Encoder;
import ch.qos.logback.core.spi.ContextAwareBase;

/**
 * The logging of desktop-ingress and env-gateway, built in code (found by logback through
 * META-INF/services): parsing an XML configuration with Joran cost ~0.4 s of every command's start-up, even of
 * {@code status} (docs/performance.md, finding 28). stdout is reserved for the one line scripts read (the ready
 * event, an issued grant or token) and never receives log output.
 * <ul>
 *   <li>Application logs: the root logger at INFO, JSON lines on stderr (appender {@value #CONSOLE}, logback's
 *       JsonEncoder with level, logger, thread, time, formatted message, key-value pairs, throwable);
 *       {@link ConsoleLogging} swaps the root's console appenders for text ones.</li>
 *   <li>Audit events (logger {@value #AUDIT_LOGGER}, already one JSON object per message): the message alone, one
 *       per line, INFO, not additive, appender {@value #AUDIT} on stderr until {@link AuditDestination} routes it
 *       by the audit-file setting. Not a FileAppender on /dev/stderr: that reopens fd 2 with its own file offset,
 *       so when stderr is redirected to a file the two writers overwrite each other's lines.</li>
 *   <li>io.netty at WARN.</li>
 * </ul>
 * Nothing logged may contain a grant, a connection token, a proxy password or key material.
 * Steps aside (Joran runs as usual) when {@code -Dlogback.configurationFile} is set or a logback-test.xml is on the
 * class path: a user's file and the tests' configurations win.
 */
@ConfiguratorRank(ConfiguratorRank.CUSTOM_HIGH_PRIORITY)
public final class ProgramLogbackConfigurator extends ContextAwareBase implements Configurator {
    /** The root logger's JSON console appender. */
    public static final String CONSOLE = "STDERR_JSON";
    /** The audit logger's stderr appender. */
    public static final String AUDIT = "AUDIT";
    /** The audit stream's logger. */
    public static final String AUDIT_LOGGER = "ptun.audit";

    @Override
    public ExecutionStatus configure(LoggerContext context) {
        if (userConfigured()) {
            return ExecutionStatus.INVOKE_NEXT_IF_ANY;
        }
        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.INFO);
        root.addAppender(stderr(context, CONSOLE, json(context)));

        Logger audit = context.getLogger(AUDIT_LOGGER);
        audit.setLevel(Level.INFO);
        audit.setAdditive(false);
        audit.addAppender(stderr(context, AUDIT, messageOnly(context)));

        context.getLogger("io.netty").setLevel(Level.WARN);
        return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
    }

    private static boolean userConfigured() {
        ClassLoader loader = ProgramLogbackConfigurator.class.getClassLoader();
        return System.getProperty(ClassicConstants.CONFIG_FILE_PROPERTY) != null
                || loader.getResource(ClassicConstants.TEST_AUTOCONFIG_FILE) != null;
    }

    private static JsonEncoder json(LoggerContext context) {
        JsonEncoder encoder = new JsonEncoder();
        encoder.setContext(context);
        encoder.setWithSequenceNumber(false);
        encoder.setWithNanoseconds(false);
        encoder.setWithContext(false);
        encoder.setWithMDC(false);
        encoder.setWithMarkers(false);
        encoder.setWithMessage(false);
        encoder.setWithArguments(false);
        encoder.setWithFormattedMessage(true);
        encoder.setWithKVPList(true);
        encoder.setWithThrowable(true);
        encoder.start();
        return encoder;
    }

    private static MessageLineEncoder messageOnly(LoggerContext context) {
        MessageLineEncoder encoder = new MessageLineEncoder();
        encoder.setContext(context);
        encoder.start();
        return encoder;
    }

    private static ConsoleAppender<ILoggingEvent> stderr(LoggerContext context, String name,
                                                         Encoder<ILoggingEvent> encoder) {
        ConsoleAppender<ILoggingEvent> appender = new ConsoleAppender<>();
        appender.setContext(context);
        appender.setName(name);
        appender.setTarget("System.err");
        appender.setEncoder(encoder);
        appender.start();
        return appender;
    }
}
