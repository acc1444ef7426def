package dev.previewtunnel.spikes.demo;

import dev.previewtunnel.mux.local.FatalErrors;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * README command 1 runs {@link DemoMain} (as {@code demo.jar}, which this module packages only after its tests):
 * here it runs in a JVM of its own on this module's classpath, without {@code --stay}, so it ends by itself.
 */
class DemoMainTest {

    @Test
    void demoProvesAnHttpRequestAndAWebSocketRoundTripThenEnds() throws Exception {
        Path out = Files.createTempFile("ptun-demo", ".out");
        Path err = Files.createTempFile("ptun-demo", ".err");
        try {
            List<String> command = new java.util.ArrayList<>(List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m"));
            command.addAll(FatalErrors.JVM_FLAGS); // the shipped launch flags
            command.addAll(List.of("-cp", System.getProperty("java.class.path"), DemoMain.class.getName()));
            Process p = new ProcessBuilder(command)
                    .redirectOutput(out.toFile())
                    .redirectError(err.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("the demo did not end within 120 s; stdout: " + Files.readString(out));
            }
            String stdout = Files.readString(out);
            System.out.println(stdout);
            assertEquals(0, p.exitValue(), "demo exit code; stderr: " + Files.readString(err));
            JsonNode result = null;
            for (String line : stdout.split("\n")) {
                if (line.startsWith("{")) {
                    JsonNode json = new ObjectMapper().readTree(line);
                    if ("demo".equals(json.path("event").asText())) {
                        result = json;
                    }
                }
            }
            assertNotNull(result, "no demo JSON line on stdout: " + stdout);
            assertTrue(result.get("httpOk").asBoolean(), result.toString());
            assertTrue(result.get("webSocketOk").asBoolean(), result.toString());
            assertTrue(stdout.contains("OK: an HTTP request and a WebSocket round trip"), stdout);
            // The session's credential file dies with the demo.
            assertFalse(Files.exists(Path.of(result.get("credentialsFile").asText())), "credentials file left behind");
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }
}
