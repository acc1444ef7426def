package dev.previewtunnel.sampleapp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PatternAndMainTest {

    @Test
    void fillPatternIsConsistentAtAnyOffset() {
        byte[] whole = new byte[100_000];
        SampleApp.fillPattern(0, whole, whole.length);
        for (int i = 0; i < whole.length; i += 997) {
            assertEquals(SampleApp.patternByte(i), whole[i]);
        }
        byte[] part = new byte[5000];
        SampleApp.fillPattern(12_345, part, part.length);
        for (int i = 0; i < part.length; i++) {
            assertEquals(whole[12_345 + i], part[i]);
        }
        CRC32 crc = new CRC32();
        crc.update(whole);
        assertEquals(crc.getValue(), SampleApp.patternCrc(whole.length).getValue());
        assertEquals(0L, SampleApp.patternCrc(0).getValue());
    }

    @Test
    void patternIsPositionDependentBeyondSmallPeriods() {
        byte[] a = new byte[4096];
        byte[] b = new byte[4096];
        for (long off : new long[] {256, 4096, 65_536, 1L << 24, 1L << 32}) {
            SampleApp.fillPattern(0, a, a.length);
            SampleApp.fillPattern(off, b, b.length);
            assertNotEquals(java.util.Arrays.toString(a), java.util.Arrays.toString(b), "offset " + off);
        }
    }

    @Test
    void hostPortParsing() {
        assertEquals(new HostPort("127.0.0.1", 5173), HostPort.parse("127.0.0.1:5173"));
        assertEquals(new HostPort("::1", 0), HostPort.parse("[::1]:0"));
        assertEquals("[::1]:80", HostPort.format("::1", 80));
        assertThrows(IllegalArgumentException.class, () -> HostPort.parse("nope"));
        assertThrows(IllegalArgumentException.class, () -> HostPort.parse("h:70000"));
    }

    @Test
    void mainPrintsReadyLineAndServes() throws Exception {
        Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
                SampleApp.class.getName(), "--listen", "127.0.0.1:0", "--raw-listen", "127.0.0.1:0")
                .redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String line = CompletableFuture.supplyAsync(() -> {
                try {
                    return out.readLine();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }).get(30, TimeUnit.SECONDS);
            JsonNode ready = new ObjectMapper().readTree(line);
            assertEquals("ready", ready.get("event").asText());
            String listen = ready.get("listen").asText();
            assertTrue(listen.startsWith("127.0.0.1:"), listen);
            assertTrue(ready.get("rawListen").asText().startsWith("127.0.0.1:"));
            HttpResponse<String> r = HttpClient.newHttpClient()
                    .sendAsync(HttpRequest.newBuilder(URI.create("http://" + listen + "/hello")).build(),
                            HttpResponse.BodyHandlers.ofString())
                    .get(30, TimeUnit.SECONDS);
            assertEquals("hello from the sample app\n", r.body());
        } finally {
            p.destroy();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
    }

    @Test
    void bindsIpv6Loopback() throws Exception {
        // Dev servers bind ::1 as often as 127.0.0.1; the machines this runs on have IPv6 loopback.
        SampleApp app = SampleApp.start("::1", 0);
        try (app) {
            HttpResponse<String> r = HttpClient.newHttpClient()
                    .sendAsync(HttpRequest.newBuilder(URI.create("http://[::1]:" + app.port() + "/hello")).build(),
                            HttpResponse.BodyHandlers.ofString())
                    .get(30, TimeUnit.SECONDS);
            assertEquals("hello from the sample app\n", r.body());
        }
    }
}
