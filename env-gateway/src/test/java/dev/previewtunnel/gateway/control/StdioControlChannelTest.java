package dev.previewtunnel.gateway.control;

import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.local.audit.AuditLog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The channel's thread over pipes: one response line per request line, in order; the end of input stops. */
class StdioControlChannelTest {
    @TempDir
    Path tmp;

    private ControlDispatcher dispatcher() throws IOException {
        KeyDirectory keys = KeyDirectory.init(tmp.resolve("keys"));
        return new ControlDispatcher(new ControlIssuer("env-1", keys::signingKey, Duration.ofMinutes(15),
                TargetPolicy.loopbackOnly(), new AuditLog("gateway"), Clock.systemUTC()), List::of);
    }

    @Test
    void answersEachLineInOrderAndCallsTheParentGoneAtTheEndOfInput() throws Exception {
        PipedOutputStream requests = new PipedOutputStream();
        PipedInputStream responses = new PipedInputStream(1 << 20);
        CountDownLatch gone = new CountDownLatch(1);
        StdioControlChannel channel = new StdioControlChannel(new PipedInputStream(requests, 1 << 20),
                new PipedOutputStream(responses), dispatcher(), gone::countDown);
        channel.start();
        BufferedReader out = new BufferedReader(new InputStreamReader(responses, StandardCharsets.UTF_8));
        String overlong = "{\"id\":3,\"op\":\"ping\",\"pad\":\"" + "x".repeat(StdioControlChannel.MAX_LINE_BYTES) + "\"}";
        write(requests, "{\"id\":1,\"op\":\"ping\"}\n{\"id\":2,\"op\":\"ports\"}\r\n" + overlong + "\n"
                + "{\"id\":4,\"op\":\"grant\",\"session\":\"s\",\"target\":\"localhost:5173\"}\nnot json\n"
                + "{\"id\":6,\"op\":\"ping\"}");
        assertEquals("{\"id\":1,\"pong\":true}", out.readLine());
        assertEquals("{\"id\":2,\"ports\":[]}", out.readLine());
        assertTrue(out.readLine().startsWith("{\"id\":null,\"error\":\"bad_request\",\"message\":\"request line longer"));
        assertTrue(out.readLine().startsWith("{\"id\":4,\"grant\":\"ey"));
        assertTrue(out.readLine().startsWith("{\"id\":null,\"error\":\"bad_request\""));
        assertFalse(gone.await(100, TimeUnit.MILLISECONDS), "the input is still open");
        requests.close(); // the last line has no LF: answered at the end of input
        assertEquals("{\"id\":6,\"pong\":true}", out.readLine());
        assertTrue(gone.await(10, TimeUnit.SECONDS), "the end of input means the parent is gone");
        assertTrue(channel.awaitEnded(10_000));
    }

    @Test
    void anEndOfInputAfterCloseIsNoNews() throws Exception {
        PipedOutputStream requests = new PipedOutputStream();
        AtomicInteger gone = new AtomicInteger();
        CountDownLatch answered = new CountDownLatch(1);
        OutputStream counting = new OutputStream() {
            @Override
            public void write(int b) {
                if (b == '\n') {
                    answered.countDown();
                }
            }
        };
        StdioControlChannel channel = new StdioControlChannel(new PipedInputStream(requests), counting, dispatcher(),
                gone::incrementAndGet);
        channel.start();
        channel.close();
        write(requests, "{\"id\":1,\"op\":\"ping\"}\n");
        requests.close();
        assertTrue(answered.await(10, TimeUnit.SECONDS));
        assertTrue(channel.awaitEnded(10_000), "the channel's thread ends at the end of input");
        assertEquals(0, gone.get(), "the gateway was already stopping");
    }

    @Test
    void anOutputThatBreaksMeansTheParentIsGone() throws Exception {
        PipedOutputStream requests = new PipedOutputStream();
        CountDownLatch gone = new CountDownLatch(1);
        OutputStream broken = new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw new IOException("Broken pipe");
            }
        };
        StdioControlChannel channel = new StdioControlChannel(new PipedInputStream(requests), broken, dispatcher(),
                gone::countDown);
        channel.start();
        write(requests, "{\"id\":1,\"op\":\"ping\"}\n");
        assertTrue(gone.await(10, TimeUnit.SECONDS));
        assertTrue(channel.awaitEnded(10_000), "no more reading once nobody can be answered");
    }

    private static void write(OutputStream out, String text) throws IOException {
        out.write(text.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}
