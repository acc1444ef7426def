package dev.previewtunnel.ingress.browser;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * DevTools over {@code --remote-debugging-pipe}: JSON messages each ended by a NUL byte, commands to the browser's
 * fd 3, answers and events from its fd 4. No port: nothing but this process can drive the browser. One reader
 * thread per browser; {@link #close()} sets {@code closing} and writes a NUL through {@code wake} before closing
 * the descriptors: a read blocked on a pipe is not guaranteed to return when another thread closes it, and this
 * side holds the browser's output pipe open for writing too, so no end of file would come.
 */
final class PipeTransport implements DevToolsTransport {
    private final OutputStream toBrowser;
    private final InputStream fromBrowser;
    private final Runnable wake;
    private volatile boolean closing;

    private PipeTransport(OutputStream toBrowser, InputStream fromBrowser, Runnable wake) {
        this.toBrowser = toBrowser;
        this.fromBrowser = fromBrowser;
        this.wake = wake;
    }

    /** Starts reading {@code fromBrowser}; {@code wake} must make a blocked read return (e.g. write a NUL into it). */
    static PipeTransport start(OutputStream toBrowser, InputStream fromBrowser, Runnable wake, Inbound inbound) {
        PipeTransport transport = new PipeTransport(toBrowser, fromBrowser, wake);
        Thread reader = new Thread(() -> transport.read(inbound), "devtools-pipe");
        reader.setDaemon(true);
        reader.start();
        return transport;
    }

    private void read(Inbound inbound) {
        ByteArrayOutputStream message = new ByteArrayOutputStream();
        byte[] buf = new byte[64 * 1024];
        try {
            int n;
            while (!closing && (n = fromBrowser.read(buf)) >= 0) {
                for (int i = 0; i < n && !closing; i++) {
                    if (buf[i] != 0) {
                        message.write(buf[i]);
                    } else if (message.size() > 0) {
                        inbound.message(message.toString(StandardCharsets.UTF_8));
                        message.reset();
                    }
                }
            }
            inbound.ended(closing ? "closed by the client" : "closed by the browser");
        } catch (IOException e) {
            inbound.ended(closing ? "closed by the client" : "failed: " + e.getMessage());
        }
    }

    @Override
    public void send(String message) throws IOException {
        toBrowser.write(message.getBytes(StandardCharsets.UTF_8));
        toBrowser.write(0);
        toBrowser.flush();
    }

    @Override
    public void close() {
        if (closing) {
            return;
        }
        closing = true;
        wake.run();
        try {
            toBrowser.close();
        } catch (IOException e) {
            // already gone
        }
        try {
            fromBrowser.close();
        } catch (IOException e) {
            // already gone
        }
    }
}
