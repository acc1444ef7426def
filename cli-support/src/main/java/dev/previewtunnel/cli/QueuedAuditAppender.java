package dev.previewtunnel.cli;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.UnsynchronizedAppenderBase;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Hands the audit stream's lines to one writer thread ({@value #THREAD}) that passes them, in order, to the real
 * appenders (the audit file or stderr): the event loop that audits a stream open then no longer waits for the
 * encoder, the appender's lock and the {@code write} system call (docs/performance.md, finding 1).
 *
 * Lines reach the target within a few milliseconds ({@link #LINGER_NANOS}), in batches.
 *
 * <p>Nothing is dropped. When {@value #CAPACITY} lines are waiting (the disk or the reader of stderr stalled), the
 * thread that logs waits for room, as it waited for the write before this class existed: an audit line is a
 * security record, and losing it silently is worse than slowing down the streams it records. Logback's own
 * {@code AsyncAppender} by default discards INFO lines once the queue is 80% full, which is why it is not used.
 * {@link #stop()} writes every line queued before it (waiting up to {@link #STOP_WAIT}) and only then returns; a line
 * that arrives while it stops is written by the logging thread itself.
 */
final class QueuedAuditAppender extends UnsynchronizedAppenderBase<ILoggingEvent> {
    static final String THREAD = "ptun-audit-writer";
    static final int CAPACITY = 1024;
    static final long STOP_WAIT = TimeUnit.SECONDS.toMillis(10);
    /** How long the writer lets lines gather after writing some: at most ~200 wake-ups per second while busy. */
    static final long LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    private static final ILoggingEvent END = new LoggingEvent();

    private final Appender<ILoggingEvent> target;
    private final BlockingQueue<ILoggingEvent> queue;
    private final Thread writer;
    private volatile boolean stopping;

    QueuedAuditAppender(Appender<ILoggingEvent> target) {
        this(target, CAPACITY);
    }

    QueuedAuditAppender(Appender<ILoggingEvent> target, int capacity) {
        this.target = target;
        this.queue = new ArrayBlockingQueue<>(capacity);
        this.writer = new Thread(this::writeQueued, THREAD);
        writer.setDaemon(true); // a stuck disk must not keep the JVM alive; stop() is what drains
        setName(target.getName());
        setContext(target.getContext());
    }

    /** The appender the lines end in. */
    Appender<ILoggingEvent> target() {
        return target;
    }

    @Override
    public void start() {
        writer.start();
        super.start();
    }

    @Override
    protected void append(ILoggingEvent event) {
        if (stopping) {
            target.doAppend(event); // the writer may be gone: write it here rather than lose it
            return;
        }
        event.prepareForDeferredProcessing(); // formats the message and captures the thread name now
        putUninterruptibly(event);
        if (stopping && !writer.isAlive()) {
            writeLeftovers(); // stop() began after the check above and its writer is gone: nobody else will
        }
    }

    /** Waits until every line queued before this call has reached the target appender. */
    void flush() {
        if (stopping || !isStarted()) {
            return; // stop() writes everything
        }
        java.util.concurrent.CountDownLatch written = new java.util.concurrent.CountDownLatch(1);
        putUninterruptibly(new FlushMarker(written));
        boolean interrupted = false;
        while (writer.isAlive()) { // a stop() racing this call ends the writer after our marker or drains without it
            try {
                if (written.await(100, TimeUnit.MILLISECONDS)) {
                    break;
                }
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Writes what is queued, in order, then stops the writer; the target appender stays as it is (started). */
    @Override
    public void stop() {
        if (!isStarted()) {
            return;
        }
        stopping = true;
        putUninterruptibly(END);
        try {
            writer.join(STOP_WAIT);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (writer.isAlive()) {
            addWarn("audit writer did not finish within " + STOP_WAIT + " ms; " + queue.size() + " lines unwritten");
        } else {
            writeLeftovers(); // lines queued behind END by an append that raced this stop
        }
        super.stop();
    }

    /** Writes, on the calling thread, what is queued after the writer ended. */
    private void writeLeftovers() {
        java.util.List<ILoggingEvent> left = new java.util.ArrayList<>();
        queue.drainTo(left);
        for (ILoggingEvent e : left) {
            if (e instanceof FlushMarker marker) {
                marker.written.countDown();
            } else if (e != END) {
                target.doAppend(e);
            }
        }
    }

    private void putUninterruptibly(ILoggingEvent event) {
        boolean interrupted = false;
        while (true) {
            try {
                queue.put(event); // blocks while full: see the class comment
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Writes lines in order until {@link #END}. After each batch it sleeps {@link #LINGER_NANOS} before looking again,
     * and waits in {@code take()} only once the queue is empty: a {@code put} wakes this thread only while it waits
     * there, so lines a few milliseconds apart (stream opens, a page load's bursts) cost the event loop no wake-up
     * each. Woken per line, the hand-off cost more CPU than the write it saved (open-findings, spaced micro-measure).
     */
    private void writeQueued() {
        java.util.List<ILoggingEvent> batch = new java.util.ArrayList<>(64);
        while (true) {
            try {
                batch.add(queue.take());
            } catch (InterruptedException e) {
                continue; // only stop() ends this thread, after the lines queued before it
            }
            while (true) {
                queue.drainTo(batch);
                for (ILoggingEvent next : batch) {
                    if (next == END) {
                        return; // stop() queues nothing after it; lines logged meanwhile go straight to the target
                    }
                    if (next instanceof FlushMarker marker) {
                        marker.written.countDown();
                        continue;
                    }
                    try {
                        target.doAppend(next);
                    } catch (RuntimeException e) {
                        addError("audit line not written", e); // logback's appenders report their own failures
                    }
                }
                batch.clear();
                if (!stopping) {
                    java.util.concurrent.locks.LockSupport.parkNanos(LINGER_NANOS);
                }
                if (queue.isEmpty()) {
                    break; // back to take(): the next line wakes this thread
                }
            }
        }
    }

    /** Queued by {@link #flush()}; counted down when the writer reaches it. */
    private static final class FlushMarker extends LoggingEvent {
        final java.util.concurrent.CountDownLatch written;

        FlushMarker(java.util.concurrent.CountDownLatch written) {
            this.written = written;
        }
    }
}
