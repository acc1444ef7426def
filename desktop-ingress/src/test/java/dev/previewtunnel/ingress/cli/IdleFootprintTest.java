package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.gateway.cli.GatewayMain;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.JjwtJson;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.sampleapp.SampleApp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What both sides' idle figures are made of (docs/performance.md, findings 41 and 42): {@code env-gateway serve} and
 * {@code desktop-ingress run}, each in its own JVM, through their ready lines, a tunnel connection and one proxied
 * request (a grant verified by JJWT, an audit line on each side), load none of what the findings took out, each
 * JVM's class-load log shows it:
 * <ul>
 *   <li>a Jackson {@code ObjectMapper} (~500 classes, ~5 MiB of idle RSS): their JSON goes through
 *       {@link JsonTrees}, JJWT's through {@link JjwtJson}; a {@code JsonNode.toString()} would build one too
 *       ({@code InternalNodeMapper});</li>
 *   <li>the JVM's management beans (~2 MiB): the descriptor limit comes from /proc/self/limits, and the control
 *       server reads the JVM's limits only when {@code status} asks;</li>
 *   <li>logback's pattern layouts (~70 classes): the audit stream's encoder is {@code MessageLineEncoder}.</li>
 * </ul>
 */
class IdleFootprintTest {
    private static final String ENV = "e1";
    private static final List<String> FORBIDDEN = List.of("com.fasterxml.jackson.databind.ObjectMapper",
            "com.fasterxml.jackson.databind.node.InternalNodeMapper", "java.lang.management.ManagementFactory",
            "ch.qos.logback.core.pattern.PatternLayoutBase");

    @TempDir
    Path tmp;

    @Test
    void neitherProgramLoadsWhatTheIdleFindingsTookOut() throws Exception {
        KeyDirectory keys = KeyDirectory.init(tmp.resolve("keys"));
        GrantIssuer issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        Path gatewayClasses = tmp.resolve("gateway-classes.log");
        Path ingressClasses = tmp.resolve("ingress-classes.log");
        List<Process> started = new ArrayList<>();
        try (SampleApp app = SampleApp.start("127.0.0.1", 0)) {
            Process gateway = start(started, "gateway", gatewayClasses, GatewayMain.class.getName(), "serve",
                    "--keys", tmp.resolve("keys").toString(), "--env", ENV, "--listen", "127.0.0.1:0",
                    "--state-dir", tmp.resolve("gateway-state").toString(), "--audit-file", "-");
            String url = IngressCliHarness.readyLineOf(gateway, "gateway").get("url").asText();
            Path token = secretFile("token", issuer.issueConnectionToken(ENV, Duration.ofHours(1)) + "\n");
            Path grants = secretFile("grants", issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "localhost",
                    app.port()), Duration.ofMinutes(10)) + "\n");
            Process ingress = start(started, "ingress", ingressClasses, IngressMain.class.getName(), "run",
                    "--gateway", url, "--token-file", token.toString(), "--grant-file", grants.toString(),
                    "--listen", "127.0.0.1:0", "--state-dir", tmp.resolve("state").toString(), "--audit-file", "-");
            JsonNode ready = IngressCliHarness.readyLineOf(ingress, "ingress");
            try (Socket browser = IngressCliHarness.getThroughProxy(ready, "localhost:" + app.port(), "/")) {
                assertTrue(browser.getInputStream().readAllBytes().length > 0, "the page's body");
            }
        } finally {
            for (int i = started.size() - 1; i >= 0; i--) { // the ingress first, then its gateway
                started.get(i).destroy();
            }
            for (Process p : started) {
                if (!p.waitFor(30, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
            }
        }
        List<String> gatewayLoaded = loaded(gatewayClasses);
        List<String> ingressLoaded = loaded(ingressClasses);
        // The logs are the runs': their JSON, the grant verified through JJWT, the proxied stream.
        assertTrue(gatewayLoaded.contains(JjwtJson.Reading.class.getName()), "JJWT's JSON on the gateway");
        assertTrue(Files.readString(tmp.resolve("gateway.stderr")).contains("\"event\":\"stream_opened\""),
                "the gateway verified the grant and opened the stream");
        assertTrue(ingressLoaded.contains(JsonTrees.class.getName()), "the ingress wrote JSON");
        assertTrue(ingressLoaded.contains("dev.previewtunnel.mux.client.TunnelConnection"), "a tunnel connection");
        assertEquals(List.of(), gatewayLoaded.stream().filter(FORBIDDEN::contains).toList(), "gateway");
        assertEquals(List.of(), ingressLoaded.stream().filter(FORBIDDEN::contains).toList(), "ingress");
    }

    private Process start(List<Process> started, String name, Path classLog, String main, String... args)
            throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-Xmx128m", "-Xlog:class+load:file=" + classLog, "-cp",
                System.getProperty("java.class.path"), main));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().keySet().removeIf(k -> k.startsWith("PTUN_") || k.equals("NOTIFY_SOCKET"));
        pb.redirectError(tmp.resolve(name + ".stderr").toFile());
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        Process p = pb.start();
        started.add(p);
        return p;
    }

    /** Class names in a {@code -Xlog:class+load} file ("[...][info][class,load] NAME source: ..."). */
    private static List<String> loaded(Path classLog) throws Exception {
        return Files.readAllLines(classLog).stream()
                .map(line -> line.replaceFirst("^(\\[[^]]*\\])+ ", ""))
                .map(line -> line.split(" ", 2)[0])
                .toList();
    }

    private Path secretFile(String name, String content) throws Exception {
        Path file = tmp.resolve(name);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        return Files.writeString(file, content);
    }
}
