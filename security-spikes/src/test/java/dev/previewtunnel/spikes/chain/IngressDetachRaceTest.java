package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.ingress.IngressMetrics;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A grant detached (or a session closed) while one of its streams is being opened: the gateway has already
 * said yes, the browser connection has not yet taken the stream. The detach happens exactly there, from the
 * pool's stream observer, which runs when the open settles and before the proxy's own continuation: no timing,
 * no sleeps. The stream must not outlive the detach.
 */
class IngressDetachRaceTest {
    SampleApp app;
    TunnelStack stack;
    EventLoopGroup group;
    String grantId;

    @BeforeEach
    void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        stack = TunnelStack.start(1);
        grantId = UnverifiedGrantView.decode(stack.grant("localhost", app.port())).jti();
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    }

    @AfterEach
    void stop() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        stack.close();
        app.close();
    }

    /** Runs {@code action} once, when the next stream open succeeds, before the proxy sees the stream. */
    private AtomicInteger onNextOpenedStream(Runnable action) {
        AtomicInteger fired = new AtomicInteger();
        TunnelPool pool = stack.ingress().pool();
        IngressMetrics metrics = stack.ingress().metrics();
        pool.streamObserver((result, startNanos) -> {
            if (result.isSuccess() && fired.getAndIncrement() == 0) {
                action.run();
            }
            if (metrics != null) {
                metrics.settled(result, startNanos);
            }
        });
        return fired;
    }

    private void assertTheStreamEnded() {
        until("the opened stream is closed", Duration.ofSeconds(10),
                () -> stack.ingress().pool().status().liveStreams() == 0);
        until("no browser connection tracked", Duration.ofSeconds(10),
                () -> stack.session().liveConnections() == 0);
    }

    @Test
    void aConnectStreamOpenedDuringADetachIsRefusedAndClosed() throws Exception {
        BrowserSession session = stack.session();
        AtomicInteger fired = onNextOpenedStream(() -> assertEquals(0, session.detachGrant(grantId)));
        ExecutionException e = assertThrows(ExecutionException.class, () -> ProxyClients.connectTunnel(group,
                stack.proxy(), session, "localhost", app.port(), new ChannelInboundHandlerAdapter(), true));
        assertTrue(e.getCause().getMessage().contains("403"), e.getCause().getMessage());
        assertEquals(1, fired.get(), "the detach ran between the open and the proxy taking the stream");
        assertTheStreamEnded();
    }

    @Test
    void anAbsoluteFormRequestWhoseGrantIsDetachedWhileOpeningGetsTheNotGrantedPage() throws Exception {
        BrowserSession session = stack.session();
        AtomicInteger fired = onNextOpenedStream(() -> assertEquals(0, session.detachGrant(grantId)));
        int servedBefore = app.requestsServed();
        HttpResponse<String> r = ProxyClients.httpClient(stack.proxy(), session).send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + app.port() + "/hello")).header("Accept", "text/html")
                .timeout(Duration.ofSeconds(15)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(1, fired.get());
        assertEquals(403, r.statusCode(), r.body());
        assertEquals("not_granted", r.headers().firstValue("ptun-error").orElse(""));
        assertTrue(r.body().contains("was detached from this browser session"), r.body());
        assertEquals(servedBefore, app.requestsServed(), "the request never reached the target");
        assertTheStreamEnded();
    }

    @Test
    void aStreamOpenedWhileItsSessionIsClosedEndsWithTheConnection() throws Exception {
        BrowserSession session = stack.session();
        AtomicInteger fired = onNextOpenedStream(() -> {
            // What the control API's DELETE /v1/sessions/{id} does.
            stack.ingress().sessions().remove(session.id());
            session.closeAll();
        });
        int servedBefore = app.requestsServed();
        byte[] answer;
        try (Socket s = new Socket(stack.proxy().getAddress(), stack.proxy().getPort())) {
            s.setSoTimeout(15_000);
            String auth = Base64.getEncoder().encodeToString((session.username() + ":" + session.password())
                    .getBytes(StandardCharsets.UTF_8));
            s.getOutputStream().write(("GET http://localhost:" + app.port() + "/hello HTTP/1.1\r\nHost: localhost:"
                    + app.port() + "\r\nProxy-Authorization: Basic " + auth + "\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            answer = s.getInputStream().readAllBytes();
        }
        assertEquals(1, fired.get());
        assertEquals("", new String(answer, StandardCharsets.ISO_8859_1),
                "the connection closes without an answer, like the session's other connections");
        assertEquals(servedBefore, app.requestsServed(), "the request never reached the target");
        until("the opened stream is closed", Duration.ofSeconds(10),
                () -> stack.ingress().pool().status().liveStreams() == 0);
        assertEquals(0, session.liveConnections());
    }
}
