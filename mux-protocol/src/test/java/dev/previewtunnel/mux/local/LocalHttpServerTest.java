package dev.previewtunnel.mux.local;

import dev.previewtunnel.mux.local.LocalHttpServer.Reply;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.testing.RawHttp;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The one local HTTP server on one event-loop thread: a slow answer (800 ms, completed from another thread, within
 * the 1 s deadline that also bounds producing an answer) does not delay other connections; pipelined requests on one connection are answered in order, one at a time; oversized bodies
 * get 413; and arbitrary bytes (seeded random heads, cut at random points) always end in an answer or a close
 * within the deadline, never a connection held open.
 */
class LocalHttpServerTest {
    private static final Duration DEADLINE = Duration.ofSeconds(1);
    private final Transports transports = Transports.best();
    private EventLoopGroup group;
    private ScheduledExecutorService slow;
    private Channel server;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger maxInFlight = new AtomicInteger();

    @BeforeEach
    void start() throws Exception {
        group = transports.newGroup(1, "local-http-test");
        slow = Executors.newSingleThreadScheduledExecutor();
        server = LocalHttpServer.bind(group, transports.serverSocketChannel(), new InetSocketAddress("127.0.0.1", 0),
                new LocalHttpServer.Limits(DEADLINE, 64, 1024), "test", request -> {
                    int now = inFlight.incrementAndGet();
                    maxInFlight.accumulateAndGet(now, Math::max);
                    CompletableFuture<Reply> answer = new CompletableFuture<>();
                    long delay = request.path().startsWith("/slow") ? 800 : request.path().startsWith("/p") ? 50 : 0;
                    slow.schedule(() -> {
                        inFlight.decrementAndGet();
                        answer.complete(Reply.text(200, request.path() + " " + request.body().length + "\n"));
                    }, delay, TimeUnit.MILLISECONDS);
                    return answer;
                });
    }

    @AfterEach
    void stop() {
        server.close().syncUninterruptibly();
        slow.shutdownNow();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private InetSocketAddress address() {
        return (InetSocketAddress) server.localAddress();
    }

    @Test
    void aSlowAnswerDoesNotDelayAnotherConnection() throws Exception {
        CompletableFuture<RawHttp.Timed> slowOne = CompletableFuture.supplyAsync(() -> {
            try {
                return RawHttp.request(address(), "GET /slow HTTP/1.1\r\nHost: 127.0.0.1", Duration.ofSeconds(5));
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        // Wait until the slow request is being answered, then ask on another connection.
        dev.previewtunnel.testing.Await.until("slow request in flight", Duration.ofSeconds(5),
                () -> inFlight.get() == 1);
        RawHttp.Timed fast = RawHttp.request(address(), "GET /fast HTTP/1.1\r\nHost: 127.0.0.1", Duration.ofSeconds(5));
        assertEquals(200, fast.status());
        assertTrue(fast.millis() < 500, "fast answer took " + fast.millis() + " ms behind a slow one");
        assertEquals(200, slowOne.get(10, TimeUnit.SECONDS).status());
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrderOneAtATime() throws Exception {
        try (Socket s = new Socket(address().getAddress(), address().getPort())) {
            s.setSoTimeout(5000);
            String three = "GET /p1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                    + "GET /p2 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                    + "GET /p3 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
            s.getOutputStream().write(three.getBytes(StandardCharsets.US_ASCII));
            String all = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            int p1 = all.indexOf("/p1 0");
            int p2 = all.indexOf("/p2 0");
            int p3 = all.indexOf("/p3 0");
            assertTrue(p1 >= 0 && p1 < p2 && p2 < p3, all);
        }
        assertEquals(1, maxInFlight.get(), "one request in flight at a time");
    }

    @Test
    void aBodyOverTheCapIsRefused() throws Exception {
        RawHttp.Timed big = RawHttp.request(address(), "POST /b HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2048",
                Duration.ofSeconds(5));
        assertEquals(413, big.status(), big.text());
    }

    /** Property: whatever bytes arrive, the connection ends (answered or closed) within the deadline plus slack. */
    @Test
    void arbitraryBytesAlwaysEndWithinTheDeadline() throws Exception {
        Random random = new Random(16_4_5);
        String[] pieces = {"GET ", "POST ", "/x", " HTTP/1.1", "\r\n", "Host: 127.0.0.1", "Content-Length: 5",
                "Transfer-Encoding: chunked", "\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n", ":", " ", "\0", "\u00ff"};
        List<Socket> sockets = new ArrayList<>();
        long since = System.nanoTime();
        try {
            for (int i = 0; i < 48; i++) {
                StringBuilder b = new StringBuilder();
                int n = 1 + random.nextInt(12);
                for (int k = 0; k < n; k++) {
                    b.append(pieces[random.nextInt(pieces.length)]);
                }
                if (random.nextBoolean()) {
                    byte[] noise = new byte[random.nextInt(64)];
                    random.nextBytes(noise);
                    b.append(new String(noise, StandardCharsets.ISO_8859_1));
                }
                Socket s = new Socket(address().getAddress(), address().getPort());
                sockets.add(s);
                s.getOutputStream().write(b.toString().getBytes(StandardCharsets.ISO_8859_1));
            }
            for (Socket s : sockets) {
                long ended = RawHttp.millisUntilClosed(s, since, DEADLINE.plusSeconds(4));
                assertTrue(ended >= 0, "a connection with arbitrary bytes is still open after the deadline");
            }
        } finally {
            for (Socket s : sockets) {
                s.close();
            }
        }
    }
}
