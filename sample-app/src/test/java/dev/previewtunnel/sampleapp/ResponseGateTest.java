package dev.previewtunnel.sampleapp;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code /gated-bytes}: held until the gate opens, then served; a gate never opened answers 503 saying why. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ResponseGateTest {
    private SampleApp app;
    private HttpClient client;

    @BeforeEach
    void start() {
        app = SampleApp.start("127.0.0.1", 0);
        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    }

    @AfterEach
    void stop() {
        app.close();
    }

    private CompletableFuture<HttpResponse<byte[]>> get(String pathAndQuery) {
        return client.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + pathAndQuery))
                .build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    @Test
    void heldUntilOpenedThenServedAsBytes() throws Exception {
        ResponseGate gate = app.gate("g", 3, Duration.ofSeconds(60));
        List<CompletableFuture<HttpResponse<byte[]>>> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            held.add(get("/gated-bytes?gate=g&n=1000"));
        }
        assertTrue(gate.awaitArrivals(3, Duration.ofSeconds(30)), "arrived: " + gate.arrived());
        assertTrue(held.stream().noneMatch(CompletableFuture::isDone), "nothing answered before the gate opened");
        gate.open();
        for (CompletableFuture<HttpResponse<byte[]>> f : held) {
            HttpResponse<byte[]> r = f.get(30, TimeUnit.SECONDS);
            assertEquals(200, r.statusCode());
            assertEquals(1000, r.body().length);
            assertEquals(SampleApp.patternByte(999), r.body()[999]);
        }
        assertEquals(200, get("/gated-bytes?gate=g&n=1").get(30, TimeUnit.SECONDS).statusCode(), "open stays open");
    }

    @Test
    void aGateNeverOpenedAnswers503NamingHowManyArrived() throws Exception {
        app.gate("late", 2, Duration.ofMillis(200));
        HttpResponse<byte[]> r = get("/gated-bytes?gate=late&n=10").get(30, TimeUnit.SECONDS);
        assertEquals(503, r.statusCode());
        String body = new String(r.body(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(body.contains("gate late was not opened within 200 ms; 1 of 2 requests had arrived"), body);
        assertEquals(404, get("/gated-bytes?gate=nope&n=10").get(30, TimeUnit.SECONDS).statusCode());
        assertFalse(body.isEmpty());
    }
}
