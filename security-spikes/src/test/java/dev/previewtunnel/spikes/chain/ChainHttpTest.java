package dev.previewtunnel.spikes.chain;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

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

    @Test
    void twoHundredConcurrentStreamsOfOneMegabyteEach() throws Exception {
        int streams = 200;
        long size = 1024 * 1024;
        List<CompletableFuture<long[]>> results = new ArrayList<>();
        for (int i = 0; i < streams; i++) {
            results.add(client.sendAsync(HttpRequest.newBuilder(URI.create(base + "/bytes?n=" + size)).build(),
                    HttpResponse.BodyHandlers.ofInputStream()).thenApply(r -> {
                        CRC32 crc = new CRC32();
                        long n = drain(r.body(), crc);
                        return new long[] {r.statusCode(), n, crc.getValue()};
                    }));
        }
        long expectedCrc = SampleApp.patternCrc(size).getValue();
        for (CompletableFuture<long[]> f : results) {
            long[] result = f.get(120, TimeUnit.SECONDS);
            assertEquals(200, result[0]);
            assertEquals(size, result[1]);
            assertEquals(expectedCrc, result[2]);
        }
        // The streams were spread over the bounded pool, never more connections than configured.
        assertTrue(stack.gateway().connectionCount() <= 2, "connections: " + stack.gateway().connectionCount());
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
