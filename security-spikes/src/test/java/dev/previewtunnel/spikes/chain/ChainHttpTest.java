package dev.previewtunnel.spikes.chain;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.sampleapp.ResponseGate;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * HTTP through the whole chain as a browser sends it: absolute-form requests to the ingress proxy, one stream
 * per browser connection to the gateway, the gateway dialing the sample app on loopback. Byte-exact by CRC.
 */
class ChainHttpTest {
    static SampleApp app;
    static TunnelStack stack;
    static HttpClient client;
    static String base;

    @BeforeAll
    static void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        stack = TunnelStack.start(2);
        stack.grant("localhost", app.port());
        client = ProxyClients.httpClient(stack.proxy(), stack.session());
        base = "http://localhost:" + app.port();
    }

    @AfterAll
    static void stop() {
        stack.close();
        app.close();
    }

    @Test
    void getReturnsThePage() throws Exception {
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(base + "/hello")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        assertEquals(SampleApp.HELLO_BODY, r.body());
        HttpResponse<String> index = client.send(HttpRequest.newBuilder(URI.create(base + "/")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertTrue(index.body().contains(SampleApp.INDEX_MARKER));
    }

    @Test
    void chunkedStreamingResponseIsByteExact() throws Exception {
        int chunks = 2000;
        int size = 4096;
        HttpResponse<InputStream> r = client.send(
                HttpRequest.newBuilder(URI.create(base + "/stream?chunks=" + chunks + "&size=" + size)).build(),
                HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, r.statusCode());
        assertEquals("chunked", r.headers().firstValue("transfer-encoding").orElse("").toLowerCase(Locale.ROOT));
        CRC32 crc = new CRC32();
        long n = drain(r.body(), crc);
        assertEquals((long) chunks * size, n);
        assertEquals(SampleApp.patternCrc(n).getValue(), crc.getValue());
    }

    @Test
    void hundredMegabyteRequestBodyIsByteExact() throws Exception {
        long size = 100L * 1024 * 1024;
        HttpRequest upload = HttpRequest.newBuilder(URI.create(base + "/upload"))
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new PatternInputStream(size)))
                .build();
        HttpResponse<String> r = client.send(upload, HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        JsonNode json = new ObjectMapper().readTree(r.body());
        assertEquals(size, json.get("bytes").asLong());
        assertEquals(String.format("%08x", SampleApp.patternCrc(size).getValue()), json.get("crc32").asText());
    }

    @Test
    void requestReachesTheTargetInOriginFormWithoutProxyHeaders() throws Exception {
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(base + "/echo-headers?x=1"))
                .header("X-App", "kept").build(), HttpResponse.BodyHandlers.ofString());
        JsonNode json = new ObjectMapper().readTree(r.body());
        assertEquals("/echo-headers?x=1", json.get("uri").asText());
        JsonNode headers = json.get("headers");
        assertFalse(headers.has("proxy-authorization"), r.body());
        assertFalse(headers.has("proxy-connection"), r.body());
        assertEquals("kept", headers.get("x-app").get(0).asText());
        assertEquals("localhost:" + app.port(), headers.get("host").get(0).asText());
    }

    /**
     * An absolute-form request with {@code Upgrade: websocket} (what a browser sends to a proxy for ws:// when it
     * does not use CONNECT): the target's 101 passes through, and from then on the stream is raw: masked frames
     * reach the sample app's echo and come back byte-exact.
     */
    @Test
    void absoluteFormWebSocketUpgradeTurnsTheStreamRaw() throws Exception {
        try (RawProxySocket s = new RawProxySocket(stack.proxy())) {
            s.sendHead("GET http://localhost:" + app.port() + "/ws HTTP/1.1",
                    "Host: localhost:" + app.port(),
                    "Proxy-Authorization: " + RawProxySocket.proxyAuthorization(stack.session()),
                    "Upgrade: websocket",
                    "Connection: Upgrade",
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                    "Sec-WebSocket-Version: 13");
            String head = s.readHead();
            assertTrue(head.startsWith("HTTP/1.1 101"), head);
            // RFC 6455's example key and its accept value: the target's own handshake answer came through.
            assertTrue(head.toLowerCase(Locale.ROOT).contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
                    head);
            java.util.Random random = new java.util.Random(5);
            int roundTrips = 0;
            for (int size : new int[] {0, 5, 125, 126, 4096, 65_535, 65_536, 300_000}) {
                for (int i = 0; i < 10; i++) {
                    byte[] payload = new byte[size];
                    random.nextBytes(payload);
                    s.sendFrame(0x2, payload);
                    RawProxySocket.Frame echo = s.readFrame();
                    assertEquals(0x2, echo.opcode(), "binary frame echoed");
                    assertTrue(echo.fin());
                    assertArrayEquals(payload, echo.payload(), "echo of " + size + " bytes");
                    roundTrips++;
                }
            }
            s.sendFrame(0x1, "text too".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            assertEquals("text too", new String(s.readFrame().payload(), java.nio.charset.StandardCharsets.UTF_8));
            s.sendFrame(0x8, new byte[] {0x03, (byte) 0xe8}); // close, 1000
            assertEquals(0x8, s.readFrame().opcode(), "the target answers the close");
            System.out.printf("{\"test\":\"absolute_form_upgrade\",\"roundTrips\":%d}%n", roundTrips + 1);
        }
    }

    /**
     * Hop-by-hop headers (RFC 9110 7.6.1) end at the proxy: those named in {@code Connection}, {@code TE},
     * {@code Keep-Alive}, {@code Upgrade} of a request that is not an upgrade, and every {@code Proxy-*}.
     */
    @Test
    void hopByHopHeadersAreRemovedUpstream() throws Exception {
        try (RawProxySocket s = new RawProxySocket(stack.proxy())) {
            s.sendHead("GET http://localhost:" + app.port() + "/echo-headers?hop=1 HTTP/1.1",
                    "Host: localhost:" + app.port(),
                    "Proxy-Authorization: " + RawProxySocket.proxyAuthorization(stack.session()),
                    "Connection: keep-alive, X-Listed-Hop",
                    "X-Listed-Hop: only for the proxy",
                    "TE: trailers",
                    "Keep-Alive: timeout=5",
                    "Upgrade: h2c",
                    "Proxy-Connection: keep-alive",
                    "Proxy-Custom: proxy only",
                    "X-App: kept");
            String head = s.readHead();
            assertTrue(head.startsWith("HTTP/1.1 200"), head);
            java.util.regex.Matcher length = java.util.regex.Pattern.compile("(?im)^content-length:\\s*(\\d+)")
                    .matcher(head);
            assertTrue(length.find(), head);
            String body = new String(s.readExactly(Integer.parseInt(length.group(1))),
                    java.nio.charset.StandardCharsets.UTF_8);
            JsonNode json = new ObjectMapper().readTree(body);
            assertEquals("/echo-headers?hop=1", json.get("uri").asText(), "origin-form upstream");
            JsonNode headers = json.get("headers");
            for (String gone : List.of("x-listed-hop", "te", "keep-alive", "upgrade", "proxy-connection",
                    "proxy-custom", "proxy-authorization")) {
                assertFalse(headers.has(gone), gone + " reached the target: " + body);
            }
            assertFalse(headers.has("connection") && headers.get("connection").toString().toLowerCase(Locale.ROOT)
                    .contains("x-listed-hop"), body);
            assertEquals("kept", headers.get("x-app").get(0).asText(), body);
            assertEquals("localhost:" + app.port(), headers.get("host").get(0).asText(), body);
        }
    }

    /** {@code [::1]:P} means the environment's loopback port P: a target bound on ::1 only is reached. */
    @Test
    void ipv6LoopbackAuthorityReachesATargetOnIpv6Loopback() throws Exception {
        // Fails (does not skip) where ::1 cannot be bound: the tunnel must carry IPv6 loopback targets.
        try (SampleApp v6 = SampleApp.start("::1", 0)) {
            stack.grant("localhost", v6.port());
            HttpResponse<String> r = client.send(HttpRequest.newBuilder(
                    URI.create("http://[::1]:" + v6.port() + "/hello")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(SampleApp.HELLO_BODY, r.body());
            assertTrue(v6.requestsServed() >= 1, "the ::1 target served it");
        }
    }

    /**
     * 200 requests held at the target until all 200 have arrived: each holds its own browser connection (the JDK
     * client sends one request at a time per HTTP/1.1 connection and none can finish before the gate opens), its
     * own tunnel stream and its own target socket, all at once. Only then are the 1 MB responses released.
     */
    @Test
    void twoHundredConcurrentStreamsOfOneMegabyteEach() throws Exception {
        int streams = 200;
        long size = 1024 * 1024;
        ResponseGate gate = app.gate("concurrent-200", streams, Duration.ofSeconds(120));
        int acceptedBefore = app.acceptedConnections();
        List<CompletableFuture<long[]>> results = new ArrayList<>();
        for (int i = 0; i < streams; i++) {
            results.add(client.sendAsync(HttpRequest.newBuilder(
                            URI.create(base + "/gated-bytes?gate=" + gate.name() + "&n=" + size)).build(),
                    HttpResponse.BodyHandlers.ofInputStream()).thenApply(r -> {
                        CRC32 crc = new CRC32();
                        long n = drain(r.body(), crc);
                        return new long[] {r.statusCode(), n, crc.getValue()};
                    }));
        }
        if (!gate.awaitArrivals(streams, Duration.ofSeconds(90))) {
            int arrived = gate.arrived();
            gate.open();
            throw new AssertionError("only " + arrived + " of " + streams
                    + " requests reached the target at the same time (waited 90 s)");
        }
        // While all 200 are held: 200 live streams at the gateway, 200 target sockets, spread over the pool.
        int gatewayLive = stack.gateway().liveStreams().size();
        int targetSockets = app.acceptedConnections() - acceptedBefore;
        List<Integer> perConnection = stack.ingress().pool().liveStreamsPerConnection();
        int gatewayConnections = stack.gateway().connectionCount();
        gate.open();
        long expectedCrc = SampleApp.patternCrc(size).getValue();
        for (CompletableFuture<long[]> f : results) {
            long[] result = f.get(120, TimeUnit.SECONDS);
            assertEquals(200, result[0]);
            assertEquals(size, result[1]);
            assertEquals(expectedCrc, result[2]);
        }
        System.out.printf("{\"test\":\"concurrent_streams\",\"heldAtTarget\":%d,\"gatewayLiveStreams\":%d,"
                        + "\"targetSockets\":%d,\"gatewayConnections\":%d,\"ingressStreamsPerConnection\":\"%s\"}%n",
                gate.arrived(), gatewayLive, targetSockets, gatewayConnections, perConnection);
        assertEquals(streams, gate.arrived(), "requests that reached the gate");
        assertTrue(gatewayLive >= streams, "gateway live streams while held: " + gatewayLive);
        assertTrue(targetSockets >= streams, "target sockets opened for the held requests: " + targetSockets);
        // The pool is 2 connections and the ingress places each stream on the least-loaded one: both carry streams.
        assertEquals(2, gatewayConnections, "tunnel connections at the gateway");
        assertEquals(2, perConnection.size(), "usable pool connections: " + perConnection);
        assertTrue(perConnection.stream().allMatch(n -> n > 0), "streams on every pool connection: " + perConnection);
        assertTrue(perConnection.stream().mapToInt(Integer::intValue).sum() >= streams,
                "streams open on the pool while held: " + perConnection);
    }

    static long drain(InputStream in, CRC32 crc) {
        try (in) {
            byte[] buf = new byte[64 * 1024];
            long total = 0;
            int n;
            while ((n = in.read(buf)) > 0) {
                crc.update(buf, 0, n);
                total += n;
            }
            return total;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The sample app's byte pattern as a stream, so uploads need no memory. */
    static final class PatternInputStream extends InputStream {
        private final long size;
        private long offset;

        PatternInputStream(long size) {
            this.size = size;
        }

        @Override
        public int read() {
            if (offset >= size) {
                return -1;
            }
            return SampleApp.patternByte(offset++) & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (offset >= size) {
                return -1;
            }
            int n = (int) Math.min(len, size - offset);
            byte[] tmp = off == 0 ? b : new byte[n];
            SampleApp.fillPattern(offset, tmp, n);
            if (off != 0) {
                System.arraycopy(tmp, 0, b, off, n);
            }
            offset += n;
            return n;
        }
    }
}
