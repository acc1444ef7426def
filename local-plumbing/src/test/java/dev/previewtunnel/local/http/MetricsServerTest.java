package dev.previewtunnel.local.http;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The loopback Prometheus endpoint: text exposition at /metrics, nothing else, local scrapers only. */
class MetricsServerTest {
    private final HttpClient client = HttpClient.newHttpClient();

    @Test
    void servesTheTextExpositionAtMetrics() throws Exception {
        PrometheusMeterRegistry registry = MetricsServer.newRegistry();
        Counter counter = Counter.builder("ptun.test.things").description("things").register(registry);
        try (MetricsServer server = MetricsServer.start(new InetSocketAddress("127.0.0.1", 0), registry)) {
            assertTrue(server.url().matches("http://127\\.0\\.0\\.1:\\d+/metrics"), server.url());
            counter.increment(3);
            HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(server.url())).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode());
            assertEquals(MetricsEndpoint.CONTENT_TYPE, r.headers().firstValue("Content-Type").orElse(""));
            assertTrue(r.body().contains("# TYPE ptun_test_things_total counter"), r.body());
            assertTrue(r.body().contains("ptun_test_things_total 3.0"), r.body());
            assertTrue(r.body().contains("jvm_memory_used_bytes"), "JVM meters are bound");

            URI other = URI.create(server.url().replace("/metrics", "/other"));
            assertEquals(404, client.send(HttpRequest.newBuilder(other).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode());
            assertEquals(405, client.send(HttpRequest.newBuilder(URI.create(server.url()))
                    .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding())
                    .statusCode());
            assertEquals(403, client.send(HttpRequest.newBuilder(URI.create(server.url()))
                    .header("Origin", "http://evil.example").build(), HttpResponse.BodyHandlers.discarding())
                    .statusCode(), "a web page cannot read it");
            assertEquals(403, rawStatus(server.address(), "evil.example:80"), "DNS rebinding: non-loopback Host");
            assertEquals(200, rawStatus(server.address(), "localhost:" + server.address().getPort()));
        }
    }

    @Test
    void servesBaseUnitsAndNoRollingMax() throws Exception {
        PrometheusMeterRegistry registry = MetricsServer.newRegistry();
        Timer.builder("ptun.test.open").description("open").serviceLevelObjectives(Duration.ofMillis(5))
                .register(registry).record(Duration.ofMillis(3));
        try (MetricsServer server = MetricsServer.start(new InetSocketAddress("127.0.0.1", 0), registry)) {
            String body = client.send(HttpRequest.newBuilder(URI.create(server.url())).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            assertTrue(body.contains("# TYPE ptun_test_open_seconds histogram"), body);
            assertFalse(body.contains("ptun_test_open_seconds_max"), "a timer's rolling max is not served");
            assertTrue(body.contains("# TYPE process_cpu_seconds_total counter"), "CPU time in seconds");
            assertFalse(body.contains("process_cpu_time_ns"), "not in nanoseconds");
            assertTrue(body.contains("# TYPE process_open_fds gauge"), "Prometheus' standard name, no unit");
            assertTrue(body.contains("# TYPE system_cpus gauge"), "no gauge ending in _count");
            assertTrue(body.contains("# TYPE jvm_classes_loaded_classes gauge"), "class loading");
            assertTrue(body.contains("# TYPE jvm_gc_memory_allocated_bytes_total counter"), "GC");
        }
    }

    @Test
    void listensOnLoopbackOnly() {
        assertThrows(IllegalArgumentException.class,
                () -> MetricsServer.start(new InetSocketAddress("0.0.0.0", 0), MetricsServer.newRegistry()));
    }

    @Test
    void loopbackHosts() {
        for (String ok : new String[] {"localhost", "localhost:9", "127.0.0.1:9464", "127.1.2.3", "[::1]:9464"}) {
            assertTrue(LocalApi.loopbackHost(ok), ok);
        }
        for (String bad : new String[] {"", "example.com", "10.0.0.1:9464", "[::2]:1", "127.0.0.1.nip.io"}) {
            assertTrue(!LocalApi.loopbackHost(bad), bad);
        }
    }

    private static int rawStatus(InetSocketAddress address, String host) throws Exception {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), address.getPort())) {
            OutputStream out = s.getOutputStream();
            out.write(("GET /metrics HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            String head = new String(in.readNBytes(12), StandardCharsets.US_ASCII);
            return Integer.parseInt(head.substring(9, 12));
        }
    }
}
