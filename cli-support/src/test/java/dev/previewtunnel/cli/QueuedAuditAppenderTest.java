package dev.previewtunnel.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.AppenderBase;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The audit queue: lines arrive in order and on the writer thread, stop() writes every queued line, and a full
 * queue makes the logging thread wait instead of dropping a line.
 */
class QueuedAuditAppenderTest {
    private final LoggerContext context = (LoggerContext) org.slf4j.LoggerFactory.getILoggerFactory();

    /** Records lines and the thread that wrote them; optionally holds every write until released. */
    private final class Target extends AppenderBase<ILoggingEvent> {
        final List<String> lines = new CopyOnWriteArrayList<>();
        final List<String> threads = new CopyOnWriteArrayList<>();
        final CountDownLatch release;
        final CountDownLatch entered = new CountDownLatch(1);

        Target(CountDownLatch release) {
            this.release = release;
            setContext(context);
            setName("target");
            start();
        }

        @Override
        protected void append(ILoggingEvent e) {
            entered.countDown();
            try {
                release.await();
            } catch (InterruptedException ex) {
                throw new AssertionError(ex);
            }
            lines.add(e.getFormattedMessage());
            threads.add(Thread.currentThread().getName());
        }
    }

    private ILoggingEvent line(int n) {
        return new LoggingEvent("x", context.getLogger("ptun.audit"), Level.INFO, "{\"n\":" + n + "}", null, null);
    }

    @Test
    void linesArriveInOrderOnTheWriterThreadAndStopWritesAllOfThem() {
        Target target = new Target(new CountDownLatch(0));
        QueuedAuditAppender q = new QueuedAuditAppender(target, 16);
        q.start();
        for (int i = 0; i < 10_000; i++) {
            q.doAppend(line(i));
        }
        q.stop();
        assertEquals(10_000, target.lines.size());
        for (int i = 0; i < 10_000; i++) {
            assertEquals("{\"n\":" + i + "}", target.lines.get(i));
        }
        assertTrue(target.threads.stream().allMatch(QueuedAuditAppender.THREAD::equals), "written off the caller");
        assertTrue(target.isStarted(), "the target is the destination's to stop");
    }

    @Test
    void flushReturnsOnceEverythingBeforeItIsWritten() {
        Target target = new Target(new CountDownLatch(0));
        QueuedAuditAppender q = new QueuedAuditAppender(target, 16);
        q.start();
        for (int i = 0; i < 100; i++) {
            q.doAppend(line(i));
        }
        q.flush();
        assertEquals(100, target.lines.size());
        q.stop();
    }

    @Test
    void aFullQueueMakesTheLoggerWaitAndDropsNothing() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Target target = new Target(release);
        int capacity = 4;
        QueuedAuditAppender q = new QueuedAuditAppender(target, capacity);
        q.start();
        AtomicInteger returned = new AtomicInteger();
        int total = capacity + 10;
        Thread logger = new Thread(() -> {
            for (int i = 0; i < total; i++) {
                q.doAppend(line(i));
                returned.incrementAndGet();
            }
        }, "event-loop-stand-in");
        logger.start();
        assertTrue(target.entered.await(10, TimeUnit.SECONDS), "the writer took the first line and is held");
        // The writer holds its batch (the first line and whatever it drained with it) in the target, `capacity`
        // more fill the queue, and the next put waits for room: the logger waits with lines still to log.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!(returned.get() >= capacity + 1 && returned.get() < total
                && logger.getState() == Thread.State.WAITING)) {
            assertTrue(System.nanoTime() < deadline, "logger state " + logger.getState() + ", " + returned.get()
                    + " lines accepted");
            Thread.onSpinWait();
        }
        assertTrue(target.lines.isEmpty());
        release.countDown();
        logger.join(TimeUnit.SECONDS.toMillis(10));
        assertFalse(logger.isAlive());
        q.stop();
        assertEquals(total, target.lines.size(), "every line written once the target moved again");
        for (int i = 0; i < total; i++) {
            assertEquals("{\"n\":" + i + "}", target.lines.get(i));
        }
    }

    @Test
    void aLineAfterStopIsWrittenByTheCaller() {
        Target target = new Target(new CountDownLatch(0));
        QueuedAuditAppender q = new QueuedAuditAppender(target, 16);
        q.start();
        q.doAppend(line(1));
        q.stop();
        q.flush(); // no writer any more: returns at once
        assertEquals(List.of("{\"n\":1}"), target.lines);
    }
}
