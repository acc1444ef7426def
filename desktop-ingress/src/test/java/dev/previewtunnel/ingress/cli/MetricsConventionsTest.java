package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.local.metrics.PrometheusRegistries;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.testing.Await;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.previewtunnel.ingress.cli.MetricsScrape.scrape;
import static dev.previewtunnel.ingress.cli.MetricsScrape.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Both programs for real: {@code env-gateway serve --metrics-listen} in a child JVM and {@code desktop-ingress run
 * --metrics-listen} (with an environment gateway of its own, so every documented family exists), one request that
 * succeeds and one refused, then each /metrics scrape goes through {@link PromLint} (promtool's rules and ours),
 * must carry build_info and the JVM and process meters, and its ptun_ families must be exactly the ones
 * docs/operations.md lists.
 */
class MetricsConventionsTest {
    private static final Path OPERATIONS = Path.of("..", "docs", "operations.md");
    private static final Pattern FAMILY = Pattern.compile("^# TYPE (\\S+) (\\S+)$", Pattern.MULTILINE);
    private static final Pattern DOCUMENTED = Pattern.compile("^\\| `(ptun_[a-z0-9_]+)[{`]", Pattern.MULTILINE);

    @TempDir
    Path tmp;

    @Test
    void bothScrapesFollowTheConventionsAndTheDocs() throws Exception {
        KeyDirectory keys = KeyDirectory.init(tmp.resolve("keys"));
        GrantIssuer issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        Process gateway = startGateway(tmp, tmp.resolve("keys"));
        try (TestStack e2 = TestStack.start(tmp.resolve("e2"), "e2");
             SampleApp app = SampleApp.start("127.0.0.1", 0)) {
            JsonNode gatewayReady = IngressCliHarness.readyLineOf(gateway, "gateway");
            String gatewayMetrics = gatewayReady.get("metrics").asText();
            String gatewayUrl = gatewayReady.get("url").asText();
            Path token = TestStack.secretFile(tmp, "token", issuer.issueConnectionToken(TestStack.ENV,
                    Duration.ofHours(1)) + "\n");
            Path token2 = TestStack.secretFile(tmp, "token2", e2.token() + "\n");
            int closed = TestStack.closedPort();
            Path grants = TestStack.secretFile(tmp, "grants",
                    issuer.issueGrant(GrantSpec.tcp(TestStack.ENV, "default", "localhost", app.port()),
                            Duration.ofMinutes(10)) + "\n"
                    + issuer.issueGrant(GrantSpec.tcp(TestStack.ENV, "default", "localhost", closed),
                            Duration.ofMinutes(10)) + "\n");
            RunningIngress ingress = RunningIngress.start("run", "--gateway", gatewayUrl,
                    "--token-file", token.toString(), "--grant-file", grants.toString(),
                    "--environment-gateway", "e2=" + e2.url(), "--environment-token-file", "e2=" + token2,
                    "--state-dir", tmp.resolve("s").toString(), "--metrics-listen", "127.0.0.1:0", "--pool", "1");
            try {
                JsonNode ready = ingress.readyLine();
                String ingressMetrics = ready.get("metrics").asText();
                Await.until("the tunnel connection", Duration.ofSeconds(20),
                        () -> value(scrape(ingressMetrics), "ptun_ingress_tunnel_up") == 1);
                HttpClient client = TestStack.proxiedClient(ready.get("proxy").asText(),
                        Path.of(ready.get("credentialsFile").asText()));
                assertEquals(200, get(client, "http://localhost:" + app.port() + "/"));
                assertEquals(502, get(client, "http://localhost:" + closed + "/"));

                List<String> documented = documentedFamilies();
                Set<String> seen = new TreeSet<>();
                for (String[] side : List.of(new String[] {"ptun_gateway_", gatewayMetrics},
                        new String[] {"ptun_ingress_", ingressMetrics})) {
                    String text = scrape(side[1]);
                    List<String> problems = PromLint.check(text, PrometheusRegistries.KEPT_MAX);
                    assertEquals(List.of(), problems, side[1] + " breaks the conventions");

                    Matcher build = Pattern.compile("^" + side[0] + "build_info\\{commit=\"([^\"]+)\","
                            + "protocol=\"([^\"]+)\",version=\"([^\"]+)\"} 1(\\.0)?$", Pattern.MULTILINE)
                            .matcher(text);
                    assertTrue(build.find(), () -> side[0] + "build_info missing:\n" + text);
                    assertEquals(MuxProtocol.SUBPROTOCOL, build.group(2));
                    assertTrue(build.group(1).matches("[0-9a-f]{7,40}(-dirty)?|unknown"), build.group(1));
                    assertFalse(build.group(3).isBlank() || build.group(3).startsWith("$"), build.group(3));
                    for (String expected : List.of("process_cpu_seconds_total", "process_open_fds",
                            "process_max_fds", "process_start_time_seconds", "process_uptime_seconds",
                            "jvm_memory_used_bytes", "jvm_gc_memory_allocated_bytes_total",
                            "jvm_threads_live_threads", "jvm_classes_loaded_classes")) {
                        assertTrue(Pattern.compile("^# TYPE " + expected + " ", Pattern.MULTILINE).matcher(text)
                                .find(), () -> expected + " missing from " + side[1]);
                    }
                    assertFalse(text.contains("process_cpu_time_ns"), "CPU time in nanoseconds");
                    Matcher families = FAMILY.matcher(text);
                    while (families.find()) {
                        if (families.group(1).startsWith("ptun_")) {
                            seen.add(families.group(1));
                        }
                    }
                }
                assertEquals(new TreeSet<>(documented), seen,
                        "docs/operations.md's metric tables list exactly the ptun_ families the programs serve");
                assertEquals(documented.size(), new TreeSet<>(documented).size(), "each documented once");
            } finally {
                ingress.close();
            }
            assertEquals(0, ingress.awaitExit(), ingress.captured::err);
        } finally {
            gateway.destroy();
            if (!gateway.waitFor(20, TimeUnit.SECONDS)) {
                gateway.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** The ptun_ names in the first column of docs/operations.md's tables (labels and backticks dropped). */
    private static List<String> documentedFamilies() throws Exception {
        List<String> names = new ArrayList<>();
        Matcher m = DOCUMENTED.matcher(Files.readString(OPERATIONS));
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    private static int get(HttpClient client, String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    /** {@code env-gateway serve} of environment {@link TestStack#ENV} in a child JVM (this test's class path). */
    private static Process startGateway(Path dir, Path keys) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                "dev.previewtunnel.gateway.cli.GatewayMain", "serve", "--keys", keys.toString(), "--env",
                TestStack.ENV, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--state-dir",
                dir.resolve("gateway-state").toString(), "--audit-file", dir.resolve("gateway-audit.log").toString()));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().keySet().removeIf(k -> k.startsWith("PTUN_") || k.equals("NOTIFY_SOCKET"));
        pb.redirectError(dir.resolve("gateway.stderr").toFile());
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        return pb.start();
    }
}
