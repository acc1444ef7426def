package dev.previewtunnel.local.http;

import dev.previewtunnel.mux.relay.Transports;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The checks every local API request goes through, and the per-request deadline against slow clients. */
class LocalApiTest {
    static EventLoopGroup group;
    static Channel api;
    static final String TOKEN = LocalApi.newToken();
    static final HttpClient client = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        Transports t = Transports.best();
        group = t.newGroup(1, "local-api-test");
        api = LocalApi.bind(group, t.serverSocketChannel(), new InetSocketAddress("127.0.0.1", 0), TOKEN, "test",
                (method, path, body) -> LocalApi.Response.ok(LocalApi.object().put("path", path)),
                Duration.ofMillis(500));
    }

    @AfterAll
    static void stop() {
        api.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    static String url(String path) {
        return "http://127.0.0.1:" + ((InetSocketAddress) api.localAddress()).getPort() + path;
    }

    static HttpResponse<String> get(String path, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url(path)));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void tokenOriginAndHostAreCheckedBeforeTheHandler() throws Exception {
        assertEquals(401, get("/x").statusCode());
        assertEquals(401, get("/x", "Authorization", "Bearer wrong").statusCode());
        assertEquals(403, get("/x", "Authorization", "Bearer " + TOKEN, "Origin", "http://page.example").statusCode());
        HttpResponse<String> ok = get("/x", "Authorization", "Bearer " + TOKEN);
        assertEquals(200, ok.statusCode());
        assertTrue(ok.body().contains("\"path\":\"/x\""));
        assertTrue(LocalApi.loopbackHost("localhost:1"));
        assertTrue(LocalApi.loopbackHost("[::1]:9"));
        assertTrue(!LocalApi.loopbackHost("evil.example"));
        assertTrue(!LocalApi.loopbackHost("127.0.0.1.evil.example"));
    }

    @Test
    void aClientDrippingItsRequestIsClosedAtTheDeadline() throws Exception {
        try (Socket s = new Socket("127.0.0.1", ((InetSocketAddress) api.localAddress()).getPort())) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            long start = System.nanoTime();
            out.write("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            // Never finish the head: the server must close on its own (read returns -1), bounded by SoTimeout.
            assertEquals(-1, in.read());
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(millis >= 400 && millis < 5_000, "closed after " + millis + " ms");
        }
    }

    /** bindDeferring: a reply written when the handler's stage completes, and its failures mapped. */
    @Test
    void aDeferredAnswerIsWrittenWhenItCompletesAndItsFailuresAreMapped() throws Exception {
        Transports t = Transports.best();
        CompletableFuture<LocalApi.Response> later = new CompletableFuture<>();
        CompletableFuture<Void> asked = new CompletableFuture<>();
        Channel deferring = LocalApi.bindDeferring(group, t.serverSocketChannel(),
                new InetSocketAddress("127.0.0.1", 0), TOKEN, "test", (method, path, body) -> switch (path) {
                    case "/later" -> {
                        asked.complete(null);
                        yield later;
                    }
                    case "/refused-later" -> CompletableFuture.failedFuture(
                            new LocalApi.ApiException(409, "taken", "already there"));
                    case "/broken-later" -> CompletableFuture.failedFuture(new IllegalStateException("boom"));
                    default -> throw new LocalApi.ApiException(404, "not_found", "no such resource");
                }, LocalHttpServer.Limits.defaults());
        try {
            String base = "http://127.0.0.1:" + ((InetSocketAddress) deferring.localAddress()).getPort();
            java.util.function.Function<String, HttpRequest> request = path -> HttpRequest.newBuilder(
                    URI.create(base + path)).header("Authorization", "Bearer " + TOKEN).build();

            CompletableFuture<HttpResponse<String>> pending = client.sendAsync(request.apply("/later"),
                    HttpResponse.BodyHandlers.ofString());
            asked.get(10, TimeUnit.SECONDS);
            assertFalse(pending.isDone(), "no reply before the stage completes");
            later.complete(LocalApi.Response.ok(LocalApi.object().put("answer", 42)));
            HttpResponse<String> answered = pending.get(10, TimeUnit.SECONDS);
            assertEquals(200, answered.statusCode());
            assertTrue(answered.body().contains("\"answer\":42"), answered.body());

            HttpResponse<String> refused = client.send(request.apply("/refused-later"),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(409, refused.statusCode(), "an ApiException in the stage is answered as a thrown one");
            assertTrue(refused.body().contains("\"error\":\"taken\""), refused.body());

            HttpResponse<String> broken = client.send(request.apply("/broken-later"),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(500, broken.statusCode());
            assertFalse(broken.body().contains("boom"), "the cause is not shown");

            HttpResponse<String> thrown = client.send(request.apply("/other"), HttpResponse.BodyHandlers.ofString());
            assertEquals(404, thrown.statusCode());
            assertTrue(thrown.body().contains("\"error\":\"not_found\""), thrown.body());
        } finally {
            deferring.close().syncUninterruptibly();
        }
    }
}
