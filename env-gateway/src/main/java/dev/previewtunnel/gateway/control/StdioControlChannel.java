package dev.previewtunnel.gateway.control;

import dev.previewtunnel.gateway.control.ControlLines.Line;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * {@code serve --stdio-control}: requests on the input, responses on the output, one JSON object per line,
 * answered in order on one dedicated thread (minting reads key files: never on an event loop). The end of the
 * input, or an output that can no longer be written, means the parent (desktop-ingress open, through ssh) is
 * gone: {@code onParentGone} then stops the gateway as a SIGTERM would, so no gateway outlives its ssh channel.
 */
public final class StdioControlChannel implements AutoCloseable {
    /** The longest request line accepted; a longer one is answered with bad_request and skipped. */
    public static final int MAX_LINE_BYTES = 64 * 1024;
    private static final Logger log = LoggerFactory.getLogger(StdioControlChannel.class);

    private final InputStream input;
    private final OutputStream output;
    private final ControlDispatcher dispatcher;
    private final Runnable onParentGone;
    private final Thread thread;
    private volatile boolean closed;

    public StdioControlChannel(InputStream input, OutputStream output, ControlDispatcher dispatcher,
                               Runnable onParentGone) {
        this.input = input;
        this.output = output;
        this.dispatcher = dispatcher;
        this.onParentGone = onParentGone;
        this.thread = new Thread(this::run, "ptun-stdio-control");
        // A blocking read of stdin cannot be interrupted: a signal's stop must not wait for this thread.
        this.thread.setDaemon(true);
    }

    /** Starts answering; call once, after the ready line (the first line of the output). */
    public void start() {
        thread.start();
    }

    private void run() {
        String reason;
        try {
            answerUntilEnd();
            reason = "stdin closed";
        } catch (IOException | RuntimeException e) {
            // A RuntimeException is a bug; still stop: a gateway nobody can talk to must not outlive its parent.
            reason = "stdio broken (" + e.getClass().getSimpleName() + ")";
        }
        if (!closed) {
            log.atInfo().setMessage("control channel ended ({}): the parent process is gone, stopping")
                    .addArgument(reason).addKeyValue("event", "control_ended").log();
            onParentGone.run();
        }
    }

    /** Answers every input line, one response line each, until the end of the input; throws when either breaks. */
    void answerUntilEnd() throws IOException {
        ControlLines lines = new ControlLines(input, MAX_LINE_BYTES);
        for (Line line; (line = lines.next()) != null; ) {
            var response = line.overlong() ? dispatcher.overlong(MAX_LINE_BYTES) : dispatcher.answer(line.bytes());
            output.write(ControlDispatcher.line(response));
            output.flush();
        }
    }

    /** Waits up to {@code millis} for the channel's thread to end; true if it has. For tests. */
    boolean awaitEnded(long millis) throws InterruptedException {
        thread.join(millis);
        return !thread.isAlive();
    }

    /** The gateway is stopping anyway: the end of the input that follows is not a reason to stop again. */
    @Override
    public void close() {
        closed = true;
    }
}
