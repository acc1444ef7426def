package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Not a benchmark: runs the runner with tiny sizes (direct, the Dev Tunnels peer without cipher, tunnel over ws://,
 * the protocol's floor and the ingress in front of the floor's environment side; real processes) for a few seconds
 * and checks that it prints the table and writes the JSON. The benchmark itself is bench/run.sh. The peer needs
 * node and npm (bench/devtunnels is installed with npm ci on first use): without them this test fails, it does not
 * skip.
 */
class BenchRunnerSmokeTest {

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS) // a bound on a hang: the run takes ~90 s here
    void smokeRunPrintsTheTableAndWritesJson() throws Exception {
        Config c = Config.smoke();
        assertTrue(Files.isRegularFile(c.root.resolve("env-gateway/target/env-gateway.jar"))
                        && Files.isRegularFile(c.root.resolve("desktop-ingress/target/desktop-ingress.jar")),
                "the gateway and ingress jars are built by the reactor's package phase: run mvn verify, not mvn test");
        c.jsonOut = Path.of("target/smoke-results.json").toAbsolutePath();
        Files.deleteIfExists(c.jsonOut);
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int code;
        try (PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            code = BenchRunner.run(c, out);
        }
        String printed = buf.toString(StandardCharsets.UTF_8);
        System.out.println(printed);

        assertTrue(printed.contains("1 single-stream bulk"), printed);
        assertTrue(printed.contains("targets (issue 6):"), printed);
        assertTrue(printed.contains("targets (issue 21, against the Dev Tunnels peer of the same run):"), printed);
        assertTrue(printed.contains("ping-pong p50 ws <= dt: "), printed);
        assertTrue(printed.contains("7b the same, after 1 earlier rounds of loads"), printed);
        assertTrue(printed.contains("<= 1.15x direct, JIT-warm (7b)"), printed);
        assertTrue(printed.contains("1-3 per round (above: their medians)"), printed);
        JsonNode doc = new ObjectMapper().readTree(c.jsonOut.toFile());
        for (String path : new String[]{"direct", "dt", "ws"}) {
            JsonNode r = doc.path("results").path(path);
            // Two rounds of figures 1-3, each path started afresh in the first: the medians and each round kept.
            assertEquals(2, r.path("rounds").size(), path + ": " + r);
            for (JsonNode round : r.path("rounds")) {
                assertTrue(round.path("open").path("p50ms").asDouble() > 0, path + ": " + r);
            }
            assertEquals(2, r.path("open").path("roundsMeasured").asInt(), path + ": " + r);
            assertTrue(r.path("bulk").path("downloadGbps").asDouble() > 0, path + ": " + r);
            assertTrue(r.path("bulk").path("uploadGbps").asDouble() > 0, path + ": " + r);
            assertTrue(r.path("pingpong").path("p50us").asDouble() > 0, path + ": " + r);
            assertTrue(r.path("open").path("p50ms").asDouble() > 0, path + ": " + r);
            assertTrue(r.path("concurrent").path("aggregateGbps").asDouble() > 0, path + ": " + r);
            // Figure 7 after all the others, one load per path in turn, through a tunnel kept running for it.
            assertTrue(r.path("page").path("loadMedianMs").asDouble() > 0, path + ": " + r);
            assertEquals("[\"direct\",\"dt\",\"ws\",\"mux\",\"ws-floor\",\"nginx1\",\"nginx2\"]",
                    r.path("page").path("interleavedWith").toString(), path + ": " + r);
            // Figure 7b: the second series, right after the first in a smoke run (no warm-up rounds between).
            assertTrue(r.path("pageSteady").path("loadMedianMs").asDouble() > 0, path + ": " + r);
            assertEquals(1, r.path("pageSteady").path("roundsBefore").asInt(), path + ": " + r);
        }
        // The protocol's floor pair: figures 1-3 in both rounds, its idle RSS and figure 7 (Vite's port forwarded,
        // finding 61), no other figure (it has none of the gateway's limits), no refused open, and its column and
        // ratio to the peer in the table.
        JsonNode mux = doc.path("results").path("mux");
        assertEquals(2, mux.path("rounds").size(), "mux: " + mux);
        assertEquals(2, mux.path("open").path("roundsMeasured").asInt(), "mux: " + mux);
        assertTrue(mux.path("bulk").path("downloadGbps").asDouble() > 0, "mux: " + mux);
        assertTrue(mux.path("bulk").path("uploadGbps").asDouble() > 0, "mux: " + mux);
        assertTrue(mux.path("pingpong").path("p50us").asDouble() > 0, "mux: " + mux);
        assertTrue(mux.path("open").path("p50ms").asDouble() > 0, "mux: " + mux);
        assertTrue(mux.path("idleRss").path("deskMiB").asDouble() > 0, "mux: " + mux);
        assertTrue(mux.path("idleRss").path("deskSettledMiB").asDouble() > 0, "mux: " + mux);
        assertTrue(mux.path("concurrent").isMissingNode(), "mux: " + mux);
        assertTrue(mux.path("page").path("loadMedianMs").asDouble() > 0, "mux: " + mux);
        assertTrue(mux.path("pageSteady").path("loadMedianMs").asDouble() > 0, "mux: " + mux);
        assertTrue(mux.path("page").path("ingressCpuMsPerLoad").asDouble() > 0, "mux: " + mux);
        assertTrue(printed.contains("7, 7b floor: mux ws, a port forward"), printed);
        assertTrue(mux.path("logErrors").isMissingNode(), "mux: " + mux);
        // The ingress in front of the floor's environment side (finding 53): figures 1-3 in both rounds through
        // the real ingress (its route's opens prove the floor took the lab's token), and figure 7 through its
        // proxy with each side's CPU (finding 63), no figure 4-6, no error in either log.
        JsonNode wsFloor = doc.path("results").path("ws-floor");
        assertEquals(2, wsFloor.path("open").path("roundsMeasured").asInt(), "ws-floor: " + wsFloor);
        assertTrue(wsFloor.path("bulk").path("downloadGbps").asDouble() > 0, "ws-floor: " + wsFloor);
        assertTrue(wsFloor.path("open").path("p50ms").asDouble() > 0, "ws-floor: " + wsFloor);
        assertTrue(wsFloor.path("concurrent").isMissingNode(), "ws-floor: " + wsFloor);
        assertTrue(wsFloor.path("page").path("loadMedianMs").asDouble() > 0, "ws-floor: " + wsFloor);
        assertTrue(wsFloor.path("page").path("gatewayCpuMsPerLoad").asDouble() > 0, "ws-floor: " + wsFloor);
        assertTrue(wsFloor.path("page").path("ingressCpuMsPerLoad").asDouble() > 0, "ws-floor: " + wsFloor);
        assertTrue(printed.contains("7, 7b split: + HTTP proxy, + gateway"), printed);
        assertTrue(wsFloor.path("logErrors").isMissingNode(), "ws-floor: " + wsFloor);
        String download = printed.lines().filter(l -> l.startsWith("  download (target->client)")).findFirst()
                .orElseThrow();
        // label (2 words), unit, then direct, ssh, dt, dt-aes, ws, wss, mux: the floor's column holds its median,
        // and after mux-tls and mux-proxy, ws-floor's column its own
        String[] cells = download.strip().split("\\s+");
        assertTrue(cells[9].matches("\\d+\\.\\d\\d"), "mux column: " + download);
        assertTrue(cells[12].matches("\\d+\\.\\d\\d"), "ws-floor column: " + download);
        // Figure 7's floor: the same rounds through one and two nginx HTTP proxies, with nginx's CPU per load.
        assertTrue(printed.contains("7, 7b floor: nginx as HTTP proxy, same rounds"), printed);
        for (String relay : new String[]{"nginx1", "nginx2"}) {
            JsonNode r = doc.path("pageRelays").path(relay);
            for (String series : new String[]{"page", "pageSteady"}) {
                assertTrue(r.path(series).path("loadMedianMs").asDouble() > 0, relay + ": " + r);
                assertTrue(r.path(series).has("ingressCpuMsPerLoad"), relay + ": " + r);
            }
        }
        assertTrue(doc.path("pageRelays").path("nginx2").path("page").has("gatewayCpuMsPerLoad"));
        assertTrue(doc.path("results").path("ws").path("slowReader").path("memory").path("envPeakRssMiB").asDouble() > 0);
        // The peer: both Node processes' memory, and what it negotiated (no cipher) with its versions.
        assertTrue(doc.path("results").path("dt").path("slowReader").path("memory").path("deskPeakRssMiB").asDouble()
                > 0);
        assertTrue(doc.path("notes").path("dt").asText().contains("@microsoft/dev-tunnels-ssh 3.12.42"), printed);
        assertEquals(0, code, "failures: " + doc.path("failures"));
    }
}
