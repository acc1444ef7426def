package dev.previewtunnel.sampleapp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.CookieManager;
import java.net.CookiePolicy;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SampleAppTest {
    private static final Duration T = Duration.ofSeconds(30);
    private static final ObjectMapper JSON = new ObjectMapper();

    private SampleApp app;
    private HttpClient client;

    @BeforeEach
    void start() {
        app = SampleApp.start("127.0.0.1", 0);
        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(T).build();
    }

    @AfterEach
    void stop() {
        app.close();
    }

    private URI uri(String pathAndQuery) {
        return URI.create("http://127.0.0.1:" + app.port() + pathAndQuery);
    }

    private <B> HttpResponse<B> send(HttpClient c, HttpRequest req, HttpResponse.BodyHandler<B> handler)
            throws Exception {
        return c.sendAsync(req, handler).get(T.toSeconds(), TimeUnit.SECONDS);
    }

    private HttpResponse<String> get(String pathAndQuery) throws Exception {
        return send(client, HttpRequest.newBuilder(uri(pathAndQuery)).timeout(T).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void helloWithContentLengthAndKeepAlive() throws Exception {
        for (int i = 0; i < 5; i++) {
            HttpResponse<String> r = get("/hello");
            assertEquals(200, r.statusCode());
            assertEquals("hello from the sample app\n", r.body());
            assertEquals(SampleApp.HELLO_BODY, r.body());
            assertEquals(String.valueOf(r.body().length()), r.headers().firstValue("content-length").orElseThrow());
            assertTrue(r.headers().firstValue("content-type").orElseThrow().startsWith("text/plain"));
        }
        // Sequential requests reused one kept-alive connection.
        assertEquals(1, app.acceptedConnections());
        assertEquals(5, app.requestsServed());
    }

    @Test
    void indexPage() throws Exception {
        HttpResponse<String> r = get("/");
        assertEquals(200, r.statusCode());
        assertTrue(r.headers().firstValue("content-type").orElseThrow().startsWith("text/html"));
        assertTrue(r.body().contains("<title>Preview tunnel sample app</title>"));
        assertTrue(r.body().contains(SampleApp.INDEX_MARKER));
        assertTrue(r.body().contains("location.host + '/ws'"));
        assertTrue(r.body().contains("new WebSocket("));
    }

    @Test
    void notFound() throws Exception {
        HttpResponse<String> r = get("/nope?x=1");
        assertEquals(404, r.statusCode());
        assertTrue(r.headers().firstValue("content-type").orElseThrow().startsWith("text/plain"));
        assertEquals("not found\n", r.body());
        assertEquals(404, get("/wsx").statusCode());
    }

    @Test
    void wrongMethodIs405() throws Exception {
        HttpResponse<String> r = send(client, HttpRequest.newBuilder(uri("/hello"))
                .POST(HttpRequest.BodyPublishers.ofString("x")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(405, r.statusCode());
        assertEquals("GET, HEAD", r.headers().firstValue("allow").orElseThrow());
        assertEquals(405, get("/upload").statusCode());
    }

    @Test
    void headHasHeadersButNoBody() throws Exception {
        HttpResponse<String> r = send(client, HttpRequest.newBuilder(uri("/bytes?n=1000000"))
                .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        assertEquals("1000000", r.headers().firstValue("content-length").orElseThrow());
        assertEquals("", r.body());
        // Connection still usable afterwards.
        assertEquals("hello from the sample app\n", get("/hello").body());
    }

    @Test
    void streamChecksum() throws Exception {
        int chunks = 37;
        int size = 10_007;
        HttpResponse<byte[]> r = send(client, HttpRequest.newBuilder(uri("/stream?chunks=" + chunks + "&size=" + size))
                .build(), HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, r.statusCode());
        assertFalse(r.headers().firstValue("content-length").isPresent());
        assertEquals((long) chunks * size, r.body().length);
        CRC32 crc = new CRC32();
        crc.update(r.body());
        assertEquals(SampleApp.patternCrc((long) chunks * size).getValue(), crc.getValue());
        byte[] expected = new byte[r.body().length];
        SampleApp.fillPattern(0, expected, expected.length);
        assertArrayEquals(expected, r.body());
    }

    @Test
    void streamUsesOneHttpChunkPerRequestedChunk() throws Exception {
        byte[] raw = rawExchange("GET /stream?chunks=5&size=1000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        String all = new String(raw, StandardCharsets.ISO_8859_1);
        int headerEnd = all.indexOf("\r\n\r\n");
        String head = all.substring(0, headerEnd).toLowerCase();
        assertTrue(head.startsWith("http/1.1 200"), head);
        assertTrue(head.contains("transfer-encoding: chunked"), head);
        assertTrue(head.contains("connection: close"), head);
        int pos = headerEnd + 4;
        List<Integer> sizes = new ArrayList<>();
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        while (true) {
            int eol = all.indexOf("\r\n", pos);
            int n = Integer.parseInt(all.substring(pos, eol).trim(), 16);
            pos = eol + 2;
            if (n == 0) {
                break;
            }
            sizes.add(n);
            body.write(raw, pos, n);
            pos += n;
            assertEquals("\r\n", all.substring(pos, pos + 2));
            pos += 2;
        }
        assertEquals(List.of(1000, 1000, 1000, 1000, 1000), sizes);
        CRC32 crc = new CRC32();
        crc.update(body.toByteArray());
        assertEquals(SampleApp.patternCrc(5000).getValue(), crc.getValue());
    }

    @Test
    void streamRejectsBadParameters() throws Exception {
        assertEquals(400, get("/stream?chunks=x").statusCode());
        assertEquals(400, get("/stream?size=0").statusCode());
        assertEquals(400, get("/bytes").statusCode());
        assertEquals(400, get("/bytes?n=-1").statusCode());
        HttpResponse<String> empty = get("/stream?chunks=0");
        assertEquals(200, empty.statusCode());
        assertEquals("", empty.body());
        HttpResponse<String> zero = get("/bytes?n=0");
        assertEquals(200, zero.statusCode());
        assertEquals("", zero.body());
    }

    @Test
    void bytes50MbChecksum() throws Exception {
        long n = 50L * 1024 * 1024;
        HttpResponse<InputStream> r = send(client, HttpRequest.newBuilder(uri("/bytes?n=" + n)).build(),
                HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, r.statusCode());
        assertEquals(String.valueOf(n), r.headers().firstValue("content-length").orElseThrow());
        CRC32 crc = new CRC32();
        long total = 0;
        try (InputStream in = r.body()) {
            byte[] buf = new byte[64 * 1024];
            for (int k; (k = in.read(buf)) >= 0; ) {
                crc.update(buf, 0, k);
                total += k;
            }
        }
        assertEquals(n, total);
        assertEquals(SampleApp.patternCrc(n).getValue(), crc.getValue());
    }

    @Test
    void upload20MbReturnsCrc() throws Exception {
        int n = 20 * 1024 * 1024;
        byte[] data = new byte[n];
        new Random(42).nextBytes(data);
        CRC32 expected = new CRC32();
        expected.update(data);

        // Fixed length, with Expect: 100-continue.
        HttpResponse<String> r = send(client, HttpRequest.newBuilder(uri("/upload")).expectContinue(true)
                .POST(HttpRequest.BodyPublishers.ofByteArray(data)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        assertTrue(r.headers().firstValue("content-type").orElseThrow().startsWith("application/json"));
        JsonNode json = JSON.readTree(r.body());
        assertEquals(n, json.get("bytes").asLong());
        assertEquals(String.format("%08x", expected.getValue()), json.get("crc32").asText());

        // Unknown length -> chunked request body.
        HttpResponse<String> chunked = send(client, HttpRequest.newBuilder(uri("/upload"))
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(data)))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, chunked.statusCode());
        JsonNode json2 = JSON.readTree(chunked.body());
        assertEquals(n, json2.get("bytes").asLong());
        assertEquals(String.format("%08x", expected.getValue()), json2.get("crc32").asText());

        HttpResponse<String> empty = send(client, HttpRequest.newBuilder(uri("/upload"))
                .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals("{\"bytes\":0,\"crc32\":\"00000000\"}", empty.body());
    }

    @Test
    void webSocketEcho100RoundTrips() throws Exception {
        EchoListener listener = new EchoListener();
        WebSocket ws = client.newWebSocketBuilder()
                .buildAsync(URI.create("ws://127.0.0.1:" + app.port() + "/ws"), listener)
                .get(T.toSeconds(), TimeUnit.SECONDS);
        Random random = new Random(7);
        for (int i = 0; i < 100; i++) {
            if (i % 2 == 0) {
                String text = "message " + i + " \u00e9\u4e2d";
                ws.sendText(text, true).get(T.toSeconds(), TimeUnit.SECONDS);
                assertEquals(text, listener.messages.poll(T.toSeconds(), TimeUnit.SECONDS));
            } else {
                byte[] bytes = new byte[random.nextInt(70_000)];
                random.nextBytes(bytes);
                ws.sendBinary(ByteBuffer.wrap(bytes), true).get(T.toSeconds(), TimeUnit.SECONDS);
                Object echoed = listener.messages.poll(T.toSeconds(), TimeUnit.SECONDS);
                assertNotNull(echoed);
                assertArrayEquals(bytes, (byte[]) echoed);
            }
        }
        // The maximum frame size (1 MiB) is accepted.
        byte[] max = new byte[SampleApp.MAX_WEBSOCKET_FRAME];
        random.nextBytes(max);
        ws.sendBinary(ByteBuffer.wrap(max), true).get(T.toSeconds(), TimeUnit.SECONDS);
        assertArrayEquals(max, (byte[]) listener.messages.poll(T.toSeconds(), TimeUnit.SECONDS));

        ws.sendClose(WebSocket.NORMAL_CLOSURE, "bye").get(T.toSeconds(), TimeUnit.SECONDS);
        assertEquals(WebSocket.NORMAL_CLOSURE, listener.closed.get(T.toSeconds(), TimeUnit.SECONDS));
        assertEquals(1, app.requestsServed());
    }

    @Test
    void webSocketFrameOverOneMibIsRejected() throws Exception {
        EchoListener listener = new EchoListener();
        WebSocket ws = client.newWebSocketBuilder()
                .buildAsync(URI.create("ws://127.0.0.1:" + app.port() + "/ws"), listener)
                .get(T.toSeconds(), TimeUnit.SECONDS);
        byte[] tooBig = new byte[SampleApp.MAX_WEBSOCKET_FRAME + 1];
        ws.sendBinary(ByteBuffer.wrap(tooBig), true);
        // Either a close frame with 1009 (message too big) or the connection dropping.
        Integer code;
        try {
            code = listener.closed.get(T.toSeconds(), TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            code = null;
        }
        if (code != null) {
            assertEquals(1009, code);
        }
        assertTrue(listener.messages.isEmpty());
    }

    @Test
    void plainGetOnWebSocketPathIsRejected() throws Exception {
        HttpResponse<String> r = get("/ws");
        assertEquals(400, r.statusCode());
    }

    private static final class EchoListener implements WebSocket.Listener {
        final BlockingQueue<Object> messages = new LinkedBlockingQueue<>();
        final CompletableFuture<Integer> closed = new CompletableFuture<>();
        private final StringBuilder text = new StringBuilder();
        private final ByteArrayOutputStream binary = new ByteArrayOutputStream();

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            text.append(data);
            if (last) {
                messages.add(text.toString());
                text.setLength(0);
            }
            ws.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
            byte[] b = new byte[data.remaining()];
            data.get(b);
            binary.writeBytes(b);
            if (last) {
                messages.add(binary.toByteArray());
                binary.reset();
            }
            ws.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
            closed.complete(statusCode);
            return null;
        }

        @Override
        public void onError(WebSocket ws, Throwable error) {
            closed.completeExceptionally(error);
        }
    }

    @Test
    void cookiesSetAndGet() throws Exception {
        assertEquals("", get("/cookie/get").body());

        HttpClient withCookies = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .cookieHandler(new CookieManager(null, CookiePolicy.ACCEPT_ALL)).build();
        HttpResponse<String> set = send(withCookies, HttpRequest.newBuilder(uri("/cookie/set?session=abc123")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, set.statusCode());
        assertEquals(List.of("session=abc123; Path=/; HttpOnly; SameSite=Lax"), set.headers().allValues("set-cookie"));

        HttpResponse<String> got = send(withCookies, HttpRequest.newBuilder(uri("/cookie/get")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, got.statusCode());
        assertEquals("session=abc123", got.body());

        assertEquals(400, get("/cookie/set").statusCode());
        assertEquals(400, get("/cookie/set?a=b%3Bc").statusCode());
    }

    @Test
    void redirect() throws Exception {
        HttpResponse<String> r = get("/redirect?to=/hello");
        assertEquals(302, r.statusCode());
        assertEquals("/hello", r.headers().firstValue("location").orElseThrow());

        HttpClient following = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .followRedirects(HttpClient.Redirect.NORMAL).build();
        HttpResponse<String> followed = send(following, HttpRequest.newBuilder(uri("/redirect?to=/hello")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, followed.statusCode());
        assertEquals("hello from the sample app\n", followed.body());
        assertEquals(400, get("/redirect").statusCode());
    }

    @Test
    void loginSetsTheCookieOnItsRedirect() throws Exception {
        HttpResponse<String> relative = get("/login?to=%2Fcookie%2Fget&session=rel1");
        assertEquals(302, relative.statusCode());
        assertEquals("/cookie/get", relative.headers().firstValue("location").orElseThrow());
        assertEquals(List.of("session=rel1; Path=/; HttpOnly; SameSite=Lax"), relative.headers().allValues("set-cookie"));

        HttpResponse<String> absolute = get("/login/absolute?to=%2Fcookie%2Fget&session=abs2");
        assertEquals(302, absolute.statusCode());
        assertEquals(uri("/cookie/get").toString(), absolute.headers().firstValue("location").orElseThrow());
        assertEquals(List.of("session=abs2; Path=/; HttpOnly; SameSite=Lax"), absolute.headers().allValues("set-cookie"));

        // A client that keeps cookies and follows redirects sends the cookie set by the redirect to the next page.
        HttpClient browserLike = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .followRedirects(HttpClient.Redirect.NORMAL)
                .cookieHandler(new CookieManager(null, CookiePolicy.ACCEPT_ALL)).build();
        HttpResponse<String> followed = send(browserLike, HttpRequest.newBuilder(
                uri("/login/absolute?to=%2Fcookie%2Fget&session=abs3")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, followed.statusCode());
        assertEquals("session=abs3", followed.body());

        assertEquals(400, get("/login?to=%2F%2Fevil.example%2F&session=x").statusCode(), "protocol-relative");
        assertEquals(400, get("/login?to=http%3A%2F%2Fevil.example%2F&session=x").statusCode(), "absolute to");
        assertEquals(400, get("/login?to=%2Fok").statusCode(), "no session");
        assertEquals(400, get("/login?to=%2Fok&session=a%3Bb").statusCode(), "invalid cookie value");
    }

    @Test
    void echoHeaders() throws Exception {
        HttpResponse<String> r = send(client, HttpRequest.newBuilder(uri("/echo-headers?a=1&b=two"))
                .header("X-Test", "one").header("X-Test", "two").header("X-Other", "v")
                .POST(HttpRequest.BodyPublishers.ofString("ignored body")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        assertTrue(r.headers().firstValue("content-type").orElseThrow().startsWith("application/json"));
        JsonNode json = JSON.readTree(r.body());
        assertEquals("POST", json.get("method").asText());
        assertEquals("/echo-headers?a=1&b=two", json.get("uri").asText());
        assertEquals("HTTP/1.1", json.get("protocolVersion").asText());
        JsonNode headers = json.get("headers");
        assertEquals("one", headers.get("x-test").get(0).asText());
        assertEquals("two", headers.get("x-test").get(1).asText());
        assertEquals("v", headers.get("x-other").get(0).asText());
        assertEquals("127.0.0.1:" + app.port(), headers.get("host").get(0).asText());
        assertTrue(json.get("rawHeaders").isArray());
    }

    @Test
    void echoHeadersShowsRawRequestTargetAndHeaders() throws Exception {
        String reply = new String(rawExchange("GET /echo-headers HTTP/1.1\r\nHost: h\r\nProxy-Authorization: x\r\n"
                + "X-Mixed-Case: y\r\nConnection: close\r\n\r\n"), StandardCharsets.UTF_8);
        JsonNode json = JSON.readTree(reply.substring(reply.indexOf("\r\n\r\n") + 4));
        assertEquals("/echo-headers", json.get("uri").asText());
        assertEquals("x", json.get("headers").get("proxy-authorization").get(0).asText());
        assertEquals("close", json.get("headers").get("connection").get(0).asText());
        assertEquals("X-Mixed-Case", json.get("rawHeaders").get(2).get(0).asText());
    }

    @Test
    void http10AndConnectionCloseAreHonoured() throws Exception {
        String r10 = new String(rawExchange("GET /hello HTTP/1.0\r\n\r\n"), StandardCharsets.ISO_8859_1);
        assertTrue(r10.startsWith("HTTP/1.1 200 OK\r\n"), r10);
        assertTrue(r10.endsWith("\r\n\r\nhello from the sample app\n"), r10);
        // The server closed the connection: rawExchange read to EOF.

        String s10 = new String(rawExchange("GET /stream?chunks=3&size=4 HTTP/1.0\r\n\r\n"),
                StandardCharsets.ISO_8859_1);
        assertFalse(s10.toLowerCase().contains("transfer-encoding"), s10);
        assertEquals(12, s10.length() - (s10.indexOf("\r\n\r\n") + 4));
    }

    @Test
    void pipelinedRequestsAnsweredInOrder() throws Exception {
        String reply = new String(rawExchange("GET /hello HTTP/1.1\r\nHost: h\r\n\r\n"
                + "GET /bytes?n=200000 HTTP/1.1\r\nHost: h\r\n\r\n"
                + "GET /nope HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"), StandardCharsets.ISO_8859_1);
        int first = reply.indexOf("hello from the sample app\n");
        int second = reply.indexOf("content-length: 200000");
        int third = reply.indexOf("not found\n");
        assertTrue(first > 0 && second > first && third > second, "order: " + first + " " + second + " " + third);
        assertEquals(1, app.acceptedConnections());
        assertEquals(3, app.requestsServed());
    }

    @Test
    void twoHundredConcurrentConnections() throws Exception {
        int n = 200;
        List<Socket> sockets = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                Socket s = new Socket();
                s.connect(new InetSocketAddress("127.0.0.1", app.port()), (int) T.toMillis());
                s.setSoTimeout((int) T.toMillis());
                sockets.add(s);
            }
            assertTrue(app.awaitAcceptedConnections(n, T));
            for (Socket s : sockets) {
                s.getOutputStream().write("GET /hello HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
                        .getBytes(StandardCharsets.US_ASCII));
            }
            for (Socket s : sockets) {
                String reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
                assertTrue(reply.endsWith("hello from the sample app\n"), reply);
            }
        } finally {
            for (Socket s : sockets) {
                s.close();
            }
        }
        assertEquals(n, app.acceptedConnections());
        assertEquals(n, app.requestsServed());
    }

    @Test
    void closeIsIdempotentAndStopsListening() throws Exception {
        int port = app.port();
        assertEquals("hello from the sample app\n", get("/hello").body());
        app.close();
        app.close();
        assertThrows(ConnectException.class, () -> new Socket("127.0.0.1", port).close());
    }

    @Test
    void acceptedConnectionsStartsAtZero() throws Exception {
        assertEquals(0, app.acceptedConnections());
        assertEquals(0, app.requestsServed());
        assertFalse(app.awaitAcceptedConnections(1, Duration.ofMillis(50)));
        assertEquals("127.0.0.1", app.address().getAddress().getHostAddress());
        assertEquals(app.port(), app.address().getPort());
    }

    /** Writes {@code request} on a fresh connection and reads until the server closes it. */
    private byte[] rawExchange(String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", app.port())) {
            s.setSoTimeout((int) T.toMillis());
            OutputStream out = s.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            return s.getInputStream().readAllBytes();
        }
    }

    static byte[] copy(byte[] b) {
        return Arrays.copyOf(b, b.length);
    }
}
