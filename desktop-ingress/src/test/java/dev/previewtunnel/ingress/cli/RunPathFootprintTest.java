package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.sampleapp.SampleApp;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the desktop side's idle figure is made of (docs/performance.md, finding 41): {@code desktop-ingress run} in
 * its own JVM, through its ready line, a tunnel connection and one proxied request with its audit line, never
 * constructs a Jackson {@code ObjectMapper} (~500 classes, ~5 MiB of idle RSS): its JSON goes through
 * {@link JsonTrees}. A {@code JsonNode.toString()} would build one too ({@code InternalNodeMapper}); the JVM's
 * class-load log shows either.
 */
class RunPathFootprintTest {
    private static final String ENV = "e1";

    @TempDir
    Path tmp;

    @Test
    void runPathLoadsNoObjectMapper() throws Exception {
        KeyDirectory keys = KeyDirectory.init(tmp.resolve("keys"));
        GrantIssuer issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        GrantVerifier verifier = new GrantVerifier(keys.verificationKeys(), Clock.systemUTC(),
                VerifierPolicy.defaults());
        Path classLog = tmp.resolve("class-load.log");
        try (SampleApp app = SampleApp.start("127.0.0.1", 0);
             GatewayServer gateway = GatewayServer.start(GatewayConfig.defaults(ENV,
                     new InetSocketAddress("127.0.0.1", 0)).withDrainTimeout(Duration.ofMillis(200)), verifier,
                     null, new SimpleMeterRegistry())) {
            Path token = secretFile("token", issuer.issueConnectionToken(ENV, Duration.ofHours(1)) + "\n");
            Path grants = secretFile("grants", issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "localhost",
                    app.port()), Duration.ofMinutes(10)) + "\n");
            ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx128m", "-Xlog:class+load:file=" + classLog, "-cp", System.getProperty("java.class.path"),
                    IngressMain.class.getName(), "run", "--gateway", gateway.url(false), "--token-file",
                    token.toString(), "--grant-file", grants.toString(), "--listen", "127.0.0.1:0",
                    "--state-dir", tmp.resolve("state").toString(), "--audit-file", "-");
            pb.environment().keySet().removeIf(k -> k.startsWith("PTUN_") || k.equals("NOTIFY_SOCKET"));
            pb.redirectError(tmp.resolve("ingress.stderr").toFile());
            pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            Process ingress = pb.start();
            try {
                JsonNode ready = readyLine(ingress);
                // A request through the proxy: the tunnel connection, a stream, the audit lines on both sides.
                try (Socket browser = IngressCliHarness.getThroughProxy(ready, "localhost:" + app.port(), "/")) {
                    assertTrue(browser.getInputStream().readAllBytes().length > 0, "the page's body");
                }
            } finally {
                ingress.destroy();
                assertTrue(ingress.waitFor(30, TimeUnit.SECONDS), "ingress stopped");
            }
        }
        List<String> loaded = Files.readAllLines(classLog).stream()
                .map(line -> line.replaceFirst("^\\[[^]]*\\]\\[[^]]*\\]\\[[^]]*\\] ", ""))
                .map(line -> line.split(" ", 2)[0])
                .collect(Collectors.toList());
        // The log is the run's: its JSON and its proxied stream were loaded.
        assertTrue(loaded.contains(JsonTrees.class.getName()), "JsonTrees in the class-load log");
        assertTrue(loaded.contains("dev.previewtunnel.mux.client.TunnelConnection"), "a tunnel connection");
        assertEquals(List.of(), loaded.stream().filter(c -> c.equals("com.fasterxml.jackson.databind.ObjectMapper")
                || c.equals("com.fasterxml.jackson.databind.node.InternalNodeMapper")).toList());
    }

    private Path secretFile(String name, String content) throws Exception {
        Path file = tmp.resolve(name);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        return Files.writeString(file, content);
    }

    private static JsonNode readyLine(Process p) throws Exception {
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            try {
                BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.UTF_8));
                for (String l; (l = out.readLine()) != null; ) {
                    if (l.startsWith("{") && l.contains("\"ready\"")) {
                        return l;
                    }
                }
                return null;
            } catch (java.io.IOException e) {
                return null;
            }
        });
        String ready = line.get(60, TimeUnit.SECONDS);
        assertNotNull(ready, () -> "ingress did not start (exit " + p.exitValue() + ")");
        return JsonTrees.parse(ready);
    }
}
