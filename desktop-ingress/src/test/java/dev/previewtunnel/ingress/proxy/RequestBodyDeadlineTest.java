package dev.previewtunnel.ingress.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The body deadline's two handlers around the browser codec, as {@link ProxyServer#installBrowserPipeline} orders
 * them, on a channel whose clock the test moves: when a period is armed, and that a dripping body is cut.
 */
class RequestBodyDeadlineTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(2);
    private final EmbeddedChannel browser = new EmbeddedChannel();

    RequestBodyDeadlineTest() {
        browser.freezeTime();
        RequestBodyDeadline body = new RequestBodyDeadline(TIMEOUT);
        browser.pipeline().addLast(RequestBodyDeadline.BYTES, body.bytes());
        browser.pipeline().addLast(BrowserPipeline.HTTP_CODEC, RequestFraming.browserCodec(8192));
        browser.pipeline().addLast(RequestBodyDeadline.MESSAGES, body.messages());
    }

    @AfterEach
    void release() {
        browser.finishAndReleaseAll();
    }

    private void send(String text) {
        browser.writeInbound(Unpooled.copiedBuffer(text, StandardCharsets.ISO_8859_1));
        Object m;
        while ((m = browser.readInbound()) != null) {
            ReferenceCountUtil.release(m);
        }
    }

    /** The first bytes written to the browser are a 408 page's. */
    private void assertAnswered408() {
        ByteBuf answer = browser.readOutbound();
        try {
            assertTrue(answer != null && answer.toString(StandardCharsets.ISO_8859_1).startsWith("HTTP/1.1 408"),
                    String.valueOf(answer));
        } finally {
            ReferenceCountUtil.release(answer);
        }
    }

    /** Moves the channel's clock on by {@code millis} and runs what falls due. */
    private void pass(long millis) {
        browser.advanceTimeBy(millis, TimeUnit.MILLISECONDS);
        browser.runScheduledPendingTasks();
    }

    /** Whether a timer is queued on the channel's loop (only the deadline schedules anything here). */
    private boolean timerArmed() {
        return browser.runScheduledPendingTasks() != -1;
    }

    @Test
    void requestsWithoutABodyLeaveNoTimerQueued() {
        send("CONNECT localhost:5173 HTTP/1.1\r\nHost: localhost:5173\r\n\r\n");
        assertFalse(timerArmed(), "a CONNECT has no body to time");
        send("GET http://localhost:5173/ HTTP/1.1\r\nHost: localhost:5173\r\n\r\n");
        assertFalse(timerArmed(), "nor has a GET");
    }

    @Test
    void aBodyStillToComeArmsThePeriodAndItsEndCancelsIt() {
        send("POST http://localhost:5173/ HTTP/1.1\r\nHost: localhost:5173\r\nContent-Length: 4\r\n\r\nab");
        assertTrue(timerArmed(), "the read ended inside the body");
        send("cd");
        assertFalse(timerArmed(), "the body ended");
        send("POST http://localhost:5173/ HTTP/1.1\r\nHost: localhost:5173\r\nContent-Length: 2\r\n\r\nok");
        assertFalse(timerArmed(), "a body that ends in the read that brought its head arms nothing");
    }

    @Test
    void aDrippingBodyIsAnswered408AfterOnePeriod() {
        send("POST http://localhost:5173/ HTTP/1.1\r\nHost: localhost:5173\r\nContent-Length: 100\r\n\r\na");
        pass(TIMEOUT.toMillis() - 1);
        assertNull(browser.readOutbound(), "answered before the period ended");
        send("b"); // one byte: below the minimum a period must bring
        pass(1);
        assertAnswered408();
        assertFalse(browser.isOpen(), "closed after the 408");
    }

    @Test
    void aBodyTheProxyStoppedReadingIsNotCutUntilItReadsAgain() {
        send("POST http://localhost:5173/ HTTP/1.1\r\nHost: localhost:5173\r\nContent-Length: 100\r\n\r\na");
        browser.config().setAutoRead(false); // the proxy stops reading: the target is slow (backpressure)
        send("b"); // read by the one read already asked for; none asked for after it
        pass(3 * TIMEOUT.toMillis());
        assertNull(browser.readOutbound(), "cut while the proxy itself was not reading");
        assertTrue(browser.isOpen());
        browser.config().setAutoRead(true); // reads again, and the browser sends nothing for a whole period
        pass(TIMEOUT.toMillis());
        assertAnswered408();
    }
}
