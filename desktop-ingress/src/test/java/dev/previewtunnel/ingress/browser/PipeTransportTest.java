package dev.previewtunnel.ingress.browser;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --remote-debugging-pipe}: NUL-ended messages however the bytes are cut, and {@link DevToolsPipe}'s named
 * pipes to a real child, whose reader thread ends on close.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class PipeTransportTest {
    @Test
    void messagesAreCutAtNulWhateverTheReadsAndSendsEndWithOne() throws Exception {
        PipedOutputStream browser = new PipedOutputStream();
        PipedInputStream fromBrowser = new PipedInputStream(browser, 1 << 16);
        ByteArrayOutputStream toBrowser = new ByteArrayOutputStream();
        List<String> messages = new CopyOnWriteArrayList<>();
        CompletableFuture<String> ended = new CompletableFuture<>();
        PipeTransport transport = PipeTransport.start(toBrowser, fromBrowser, () -> { }, new DevToolsTransport.Inbound() {
            @Override
            public void message(String text) {
                messages.add(text);
            }

            @Override
            public void ended(String why) {
                ended.complete(why);
            }
        });
        browser.write("{\"a\":1}\0{\"b\":".getBytes(StandardCharsets.UTF_8));
        browser.flush();
        browser.write("\"é\"}\0".getBytes(StandardCharsets.UTF_8));
        browser.close();
        assertEquals("closed by the browser", ended.get(10, TimeUnit.SECONDS));
        assertEquals(List.of("{\"a\":1}", "{\"b\":\"é\"}"), messages);

        transport.send("{\"id\":1}");
        assertEquals("{\"id\":1}\0", toBrowser.toString(StandardCharsets.UTF_8));
    }

    @Test
    void overRealNamedPipesToAChildAndTheReaderEndsOnClose() throws Exception {
        DevToolsPipe pipe = DevToolsPipe.create();
        // A "browser" that answers each command with itself: an answer with the command's id and no error.
        Process echo = pipe.wrap(List.of("/bin/sh", "-c", "cat <&3 >&4")).start();
        DevTools devTools = pipe.connect();
        try {
            assertTrue(devTools.send("Echo.me", DevTools.params().put("x", 1)).isMissingNode());
            pipe.unlink();
            // The reader is blocked on a pipe this side also holds open for writing (DevToolsPipe opens both ends
            // read-write), so no end of file comes from the child: close must end it.
            devTools.close();
            assertTrue(devTools.isClosed());
        } finally {
            echo.destroyForcibly();
            echo.waitFor(10, TimeUnit.SECONDS);
        }
        assertFalse(Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.getName().equals("devtools-pipe") && t.isAlive() && waitedOut(t)),
                "the pipe reader thread ended");
    }

    private static boolean waitedOut(Thread t) {
        try {
            t.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return t.isAlive();
    }
}
