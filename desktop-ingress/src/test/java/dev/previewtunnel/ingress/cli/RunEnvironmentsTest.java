package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.GatewayCrash;
import dev.previewtunnel.cli.FakeEnvironment;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.sampleapp.SampleApp;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.net.CookieManager;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.zip.CRC32;

import static dev.previewtunnel.ingress.cli.MetricsScrape.scrape;
import static dev.previewtunnel.ingress.cli.MetricsScrape.value;
import static dev.previewtunnel.ingress.cli.MetricsScrape.sum;
import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static dev.previewtunnel.cli.InProcessCli.concat;
import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One browser session with grants for two environments, each served by its own real env-gateway (own keys, own
 * token): each stream goes to its environment's gateway, each target answers on its own virtual host, byte-exact;
 * the virtual host (suffix from {@code --virtual-host-suffix} or its config key) survives a restart on another
 * port; a virtual host names one target (a second target under the same name is refused); and each environment's
 * pool has its own state metrics.
 *
 * <p>The two targets listen on the same port P, one on 127.0.0.1 and one on 127.0.0.2, so that only the
 * environment (and the host) tells their virtual hosts apart.
 */
class RunEnvironmentsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SESSION = "multi";

    @TempDir
    Path tmp;
    @RegisterExtension
    final FakeEnvironment env = new FakeEnvironment();

    Environment e1;
    Environment e2;
    int port;

    @BeforeEach
    void start() throws Exception {
        e1 = Environment.start(tmp.resolve("e1"), "e1", "127.0.0.1", 0);
        port = e1.app.port();
        // Port P is held on 127.0.0.1 by e1's app, so nothing else can hold the wildcard address on P: binding
        // 127.0.0.2:P cannot collide.
        e2 = Environment.start(tmp.resolve("e2"), "e2", "127.0.0.2", port);
    }

    @AfterEach
    void stop() {
        if (e2 != null) {
            e2.close();
        }
        if (e1 != null) {
            e1.close();
        }
    }

    @Test
    void oneSessionReachesTwoEnvironmentsEachThroughItsOwnGatewayAndVirtualHost() throws Exception {
        String grant1 = e1.grant("127.0.0.1", port);
        String grant2 = e2.grant("127.0.0.2", port);
        Path grants = TestStack.secretFile(tmp, "grants", grant1 + "\n" + grant2 + "\n");
        Path token1 = TestStack.secretFile(tmp, "e1.token", e1.token + "\n");
        Path token2 = TestStack.secretFile(tmp, "e2.token", e2.token + "\n");
        String dir = tmp.resolve("state").toString();
        RunningIngress running = RunningIngress.start("run", "--gateway", e1.url(), "--token-file", token1.toString(),
                "--environment-gateway", "e2=" + e2.url(), "--environment-token-file", "e2=" + token2,
                "--grant-file", grants.toString(), "--session-id", SESSION, "--virtual-host-suffix", "dev.localhost",
                "--state-dir", dir, "--drain-timeout", "PT0.2S");
        try {
            JsonNode ready = running.readyLine();
            assertEquals(e2.url(), ready.get("environments").get("e2").asText(), ready::toString);
            assertEquals("dev.localhost", ready.get("virtualHostSuffix").asText());
            HttpClient client = TestStack.proxiedClient(ready.get("proxy").asText(),
                    Path.of(ready.get("credentialsFile").asText()));
            String vhost1 = "127-0-0-1-p" + port + ".e1.dev.localhost:" + port;
            String vhost2 = "127-0-0-2-p" + port + ".e2.dev.localhost:" + port;

            // Each target through its own virtual host, byte-exact, each stream on its own gateway only.
            assertPattern(client, vhost1, 3 * 1024 * 1024 + 17);
            until("e1's gateway opened the stream", Duration.ofSeconds(10), () -> e1.streamsOpened() == 1);
            assertEquals(1, e1.app.requestsServed());
            assertEquals(0, e2.streamsOpened(), "e2's gateway saw none of e1's streams");
            assertEquals(0, e2.app.requestsServed());

            assertPattern(client, vhost2, 1024 * 1024 + 5);
            until("e2's gateway opened the stream", Duration.ofSeconds(10), () -> e2.streamsOpened() == 1);
            assertEquals(1, e2.app.requestsServed());
            assertEquals(1, e1.streamsOpened(), "e1's gateway saw none of e2's streams");
            assertEquals(1, e1.app.requestsServed());
            assertEquals(0, e1.refusals() + e2.refusals(), "no grant went to the other environment's gateway");

            // status --json shows each pool; the listing says which gateway carries each grant.
            until("both pools connected", Duration.ofSeconds(10), () -> {
                JsonNode s = statusJson(dir);
                return s.path("tunnel").path("state").asText().equals("connected")
                        && s.path("environments").path("e2").path("tunnel").path("state").asText()
                        .equals("connected");
            });
            JsonNode status = statusJson(dir);
            assertEquals(e2.url(), status.get("environments").get("e2").get("gateway").asText());
            assertEquals(1, status.get("environments").size(), status::toString);
            Result listed = run("session", "list", "--state-dir", dir);
            JsonNode listedGrants = JSON.readTree(listed.out()).get("sessions").get(0).get("grants");
            assertEquals("default", listedGrants.get(0).get("gateway").asText(), listed::toString);
            assertEquals(vhost1, listedGrants.get(0).get("virtualHost").asText());
            assertEquals("environment", listedGrants.get(1).get("gateway").asText(), listed::toString);
            assertEquals(vhost2, listedGrants.get(1).get("virtualHost").asText());
            Result human = run("status", "--state-dir", dir);
            assertTrue(human.out().contains("e2: " + e2.url() + ", connected"), human::toString);
        } finally {
            running.close();
        }
        // Closing the ingress closed every pool: neither gateway keeps a tunnel connection.
        until("both gateways lost their tunnel connections", Duration.ofSeconds(10),
                () -> e1.gateway.connectionCount() == 0 && e2.gateway.connectionCount() == 0);
        assertNoSecrets(running.captured.out(), running.captured.err(), e1.token, e2.token, grant1, grant2);
    }

    @Test
    void theVirtualHostIsTheSameAfterARestartOnAnotherPortAndKeepsItsCookie() throws Exception {
        String grant1 = e1.grant("127.0.0.1", port);
        String grant2 = e2.grant("127.0.0.2", port);
        TestStack.secretFile(tmp, "grants", grant1 + "\n" + grant2 + "\n");
        TestStack.secretFile(tmp, "e1.token", e1.token + "\n");
        TestStack.secretFile(tmp, "e2.token", e2.token + "\n");
        // Everything from the config file (relative paths from its directory), the suffix from the environment.
        Path config = Files.writeString(tmp.resolve("ingress.json"), """
                {"gateway": "%s", "token-file": "e1.token", "grant-file": ["grants"], "state-dir": "state",
                 "session-id": "%s", "environment-gateway": ["e2=%s"], "environment-token-file": ["e2=e2.token"],
                 "virtual-host-suffix": "ignored.localhost", "drain-timeout": "PT0.2S"}
                """.formatted(e1.url(), SESSION, e2.url()));
        env.put("PTUN_INGRESS_VIRTUAL_HOST_SUFFIX", "Stable.Localhost");
        String vhost2 = "127-0-0-2-p" + port + ".e2.stable.localhost:" + port;
        CookieManager jar = new CookieManager();

        int firstProxyPort;
        RunningIngress first = RunningIngress.start("run", "--config", config.toString());
        try {
            JsonNode ready = first.readyLine();
            assertEquals("stable.localhost", ready.get("virtualHostSuffix").asText(), "env over file, lower-cased");
            firstProxyPort = proxyPort(ready);
            HttpResponse<String> set = withCookies(ready, jar).send(HttpRequest.newBuilder(
                    URI.create("http://" + vhost2 + "/cookie/set?theme=dark")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, set.statusCode(), set::body);
            assertEquals(vhost2, virtualHosts(tmp.resolve("state")).get(1).get("virtualHost").asText());
        } finally {
            first.close();
        }

        // Hold the first run's port so the second one cannot get it again.
        RunningIngress second;
        try (ServerSocket held = new ServerSocket(firstProxyPort, 1, InetAddress.getByName("127.0.0.1"))) {
            second = RunningIngress.start("run", "--config", config.toString());
        }
        try {
            JsonNode ready = second.readyLine();
            assertNotEquals(firstProxyPort, proxyPort(ready), "the ingress listens elsewhere now");
            assertEquals(vhost2, virtualHosts(tmp.resolve("state")).get(1).get("virtualHost").asText());
            // Same virtual host, same origin: the cookie jar (keyed by origin, like a browser's) still sends it.
            HttpResponse<String> get = withCookies(ready, jar).send(HttpRequest.newBuilder(
                    URI.create("http://" + vhost2 + "/cookie/get")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, get.statusCode(), get::body);
            assertEquals("theme=dark", get.body());
            assertEquals(2, e2.app.requestsServed());
            assertEquals(0, e1.app.requestsServed());
        } finally {
            second.close();
        }
        assertNoSecrets(first.captured.out() + second.captured.out(), first.captured.err() + second.captured.err(),
                e1.token, e2.token, grant1, grant2);
    }

    @Test
    void aVirtualHostNamesOneTargetAndASecondTargetUnderTheSameNameIsRefused() throws Exception {
        // Same environment, same port, two hosts: the default names include the host, so both are reachable.
        String toFirst = e1.grant("127.0.0.1", port);
        String toSecond = e1.grant("127.0.0.2", port);
        Path token1 = TestStack.secretFile(tmp, "e1.token", e1.token + "\n");
        String dir = tmp.resolve("state").toString();
        RunningIngress running = RunningIngress.start("run", "--gateway", e1.url(), "--token-file", token1.toString(),
                "--grant-file", TestStack.secretFile(tmp, "grants", toFirst + "\n" + toSecond + "\n").toString(),
                "--session-id", SESSION, "--state-dir", dir, "--drain-timeout", "PT0.2S");
        try {
            JsonNode ready = running.readyLine();
            HttpClient client = TestStack.proxiedClient(ready.get("proxy").asText(),
                    Path.of(ready.get("credentialsFile").asText()));
            assertPattern(client, "127-0-0-1-p" + port + ".e1.preview.localhost:" + port, 70_001);
            assertEquals(1, e1.app.requestsServed());
            assertEquals(0, e2.app.requestsServed());
            assertPattern(client, "127-0-0-2-p" + port + ".e1.preview.localhost:" + port, 70_002);
            assertEquals(1, e2.app.requestsServed(), "the second host answered its own virtual host");
            assertEquals(1, e1.app.requestsServed());

            // An explicit name taken by another target: 409 from the control API, exit 1 from the CLI.
            Path named1 = TestStack.secretFile(tmp, "named1", e1.grant("127.0.0.1", port) + "\n");
            Path named2 = TestStack.secretFile(tmp, "named2", e1.grant("127.0.0.2", port) + "\n");
            Result web = run("grant", "add", "--session", SESSION, "--name", "web", "--grant-file",
                    named1.toString(), "--state-dir", dir);
            assertEquals(0, web.exitCode(), web::toString);
            String webHost = "web.e1.preview.localhost:" + port;
            assertEquals(webHost, JSON.readTree(web.out()).get("virtualHost").asText());
            Result taken = run("grant", "add", "--session", SESSION, "--name", "web", "--grant-file",
                    named2.toString(), "--state-dir", dir);
            assertEquals(1, taken.exitCode(), taken::toString);
            assertTrue(taken.cliErrorLine().contains("virtual host " + webHost + " is already taken by grant "
                    + JSON.readTree(web.out()).get("grantId").asText() + " for 127.0.0.1:" + port), taken::toString);
            // The first holder still answers on it, and the refused grant is not attached.
            assertPattern(client, webHost, 4097);
            assertEquals(2, e1.app.requestsServed());
            assertEquals(3, virtualHosts(tmp.resolve("state")).size());
        } finally {
            running.close();
        }
        assertNoSecrets(running.captured.out(), running.captured.err(), e1.token, toFirst, toSecond);
    }

    @Test
    void runRefusesGrantsWhoseDefaultVirtualHostsCoincide() throws Exception {
        // api.internal and api-internal have the same DNS-label form: the second would take the first's name.
        String a = e1.grant("api.internal", 8080);
        String b = e1.grant("api-internal", 8080);
        Path token1 = TestStack.secretFile(tmp, "e1.token", e1.token + "\n");
        Result r = run("run", "--gateway", e1.url(), "--token-file", token1.toString(), "--grant", a, "--grant", b,
                "--state-dir", tmp.resolve("state").toString());
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.usageError().contains("--grant #2: virtual host api-internal-p8080.e1.preview.localhost:8080 "
                + "is already taken by grant"), r::toString);
        assertNoSecrets(r.out(), r.err(), e1.token, a, b);
    }

    @Test
    void badEnvironmentSettingsFailAtStartupWithTheKeyAndTheReason() throws Exception {
        Path token1 = TestStack.secretFile(tmp, "e1.token", e1.token + "\n");
        Path token2 = TestStack.secretFile(tmp, "e2.token", e2.token + "\n");
        String[] base = {"run", "--gateway", e1.url(), "--token-file", token1.toString(), "--state-dir",
                tmp.resolve("state").toString()};
        Result noToken = run(concat(base, "--environment-gateway", "e2=" + e2.url()));
        assertTrue(noToken.usageError().contains("--environment-gateway must come with "
                + "--environment-token-file e2=FILE for environment 'e2'"), noToken::toString);
        Result noGateway = run(concat(base, "--environment-token-file", "e2=" + token2));
        assertTrue(noGateway.usageError().contains("names environment 'e2', which has no --environment-gateway"),
                noGateway::toString);
        Result noPair = run(concat(base, "--environment-gateway", e2.url()));
        assertTrue(noPair.usageError().contains("--environment-gateway must be ENV=URL"), noPair::toString);
        Result badUrl = run(concat(base, "--environment-gateway", "e2=http://127.0.0.1:1/t",
                "--environment-token-file", "e2=" + token2));
        assertTrue(badUrl.usageError().contains("--environment-gateway for e2 must be a ws:// or wss:// URL"),
                badUrl::toString);
        env.put("PTUN_INGRESS_VIRTUAL_HOST_SUFFIX", "bad_suffix.localhost");
        Result badSuffix = run(base);
        assertTrue(badSuffix.usageError().contains("virtual-host-suffix (from PTUN_INGRESS_VIRTUAL_HOST_SUFFIX) "
                + "must be a DNS name"), badSuffix::toString);
        env.clear();
        Result notAToken = run(concat(base, "--environment-gateway", "e2=" + e2.url(),
                "--environment-token-file", "e2=" + TestStack.secretFile(tmp, "two-lines", "a\nb\n")));
        assertTrue(notAToken.usageError().contains("--environment-token-file e2=" + tmp.resolve("two-lines")
                + " must hold the token on one line"), notAToken::toString);
        assertNoSecrets(noToken.out() + noGateway.out() + badUrl.out(), noToken.err() + noGateway.err()
                + badUrl.err() + notAToken.err(), e1.token, e2.token);
    }

    /**
     * Each environment pool has the default pool's meters on the /metrics endpoint, named
     * ptun_ingress_environment_* and tagged with its environment: every environment's series are there; when one
     * environment's gateway dies, only its disconnected-since gauge leaves 0 (with the status's
     * reconnectingSince), its connections go waiting or connecting and its reconnects counter counts, while the
     * other environment's pool and the default pool stay connected with 0.
     */
    @Test
    void eachEnvironmentPoolHasTheDefaultPoolsStateMetricsTaggedWithItsEnvironment() throws Exception {
        // Printed at the end: while `run` runs in-process it owns System.out.
        StringBuilder report = new StringBuilder();
        try (Environment e3 = Environment.start(tmp.resolve("e3"), "e3", "127.0.0.3", 0)) {
            Path grants = TestStack.secretFile(tmp, "grants", e1.grant("127.0.0.1", port) + "\n"
                    + e2.grant("127.0.0.2", port) + "\n");
            Path token1 = TestStack.secretFile(tmp, "e1.token", e1.token + "\n");
            Path token2 = TestStack.secretFile(tmp, "e2.token", e2.token + "\n");
            Path token3 = TestStack.secretFile(tmp, "e3.token", e3.token + "\n");
            String dir = tmp.resolve("state").toString();
            RunningIngress running = RunningIngress.start("run", "--gateway", e1.url(), "--token-file",
                    token1.toString(), "--environment-gateway", "e2=" + e2.url(), "--environment-token-file",
                    "e2=" + token2, "--environment-gateway", "e3=" + e3.url(), "--environment-token-file",
                    "e3=" + token3, "--grant-file", grants.toString(), "--session-id", SESSION, "--state-dir", dir,
                    "--metrics-listen", "127.0.0.1:0", "--pool", "2", "--drain-timeout", "PT0.2S");
            try {
                String metrics = running.readyLine().get("metrics").asText();
                until("every pool has both connections up", Duration.ofSeconds(20), () -> {
                    String m = scrape(metrics);
                    return value(m, "ptun_ingress_tunnel_connections_by_state{state=\"connected\"}") == 2
                            && value(m, byState("e2", "connected")) == 2 && value(m, byState("e3", "connected")) == 2;
                });
                String up = scrape(metrics);
                for (String environment : new String[] {"e2", "e3"}) {
                    assertEquals(0, value(up, byState(environment, "connecting")), up);
                    assertEquals(0, value(up, byState(environment, "draining")), up);
                    assertEquals(0, value(up, byState(environment, "waiting")), up);
                    assertEquals(0, value(up, environmentSample("tunnel_disconnected_since_timestamp_seconds", environment)), up);
                    assertEquals(0, value(up, environmentSample("tunnel_reconnects_total", environment)), up);
                    assertEquals(2, value(up, environmentSample("tunnel_connections_configured", environment)), up);
                    assertEquals(1, value(up, environmentSample("tunnel_up", environment)), up);
                }
                // The default pool's series keep their names and have no environment tag.
                assertEquals(0, value(up, "ptun_ingress_tunnel_disconnected_since_timestamp_seconds"), up);
                assertEquals(0, value(up, "ptun_ingress_tunnel_reconnects_total"), up);
                assertEquals(1, value(up, "ptun_ingress_tunnel_up"), up);

                Instant killedAt = Instant.now().minusSeconds(1);
                e2.kill();
                until("e2's pool is down on /metrics", Duration.ofSeconds(20), () -> value(scrape(metrics),
                        environmentSample("tunnel_disconnected_since_timestamp_seconds", "e2")) > 0);
                String down = scrape(metrics);
                double since = value(down, environmentSample("tunnel_disconnected_since_timestamp_seconds", "e2"));
                report.append("{\"test\":\"environment_pool_metrics_down\",\"e2_disconnected_since\":")
                        .append((long) since).append(",\"e2_reconnects\":")
                        .append(value(down, environmentSample("tunnel_reconnects_total", "e2")))
                        .append(",\"e3_disconnected_since\":")
                        .append(value(down, environmentSample("tunnel_disconnected_since_timestamp_seconds", "e3")))
                        .append("}\n");
                assertTrue(since >= killedAt.getEpochSecond() && since <= Instant.now().getEpochSecond(), down);
                JsonNode e2Status = statusJson(dir).path("environments").path("e2").path("tunnel");
                assertEquals("reconnecting", e2Status.path("state").asText(), e2Status::toString);
                assertEquals(Instant.parse(e2Status.path("reconnectingSince").asText()).getEpochSecond(),
                        (long) since, () -> e2Status + "\n" + down);
                assertEquals(0, value(down, environmentSample("tunnel_up", "e2")), down);
                assertEquals(0, value(down, byState("e2", "connected")), down);
                assertEquals(2, value(down, byState("e2", "waiting")) + value(down, byState("e2", "connecting")),
                        down);
                assertTrue(value(down, environmentSample("tunnel_reconnects_total", "e2")) >= 1, down);
                // The other environment's pool and the default pool did not notice.
                assertEquals(0, value(down, environmentSample("tunnel_disconnected_since_timestamp_seconds", "e3")), down);
                assertEquals(2, value(down, byState("e3", "connected")), down);
                assertEquals(0, value(down, environmentSample("tunnel_reconnects_total", "e3")), down);
                assertEquals(0, value(down, "ptun_ingress_tunnel_disconnected_since_timestamp_seconds"), down);
                assertEquals(2, value(down, "ptun_ingress_tunnel_connections_by_state{state=\"connected\"}"), down);
            } finally {
                running.close();
            }
            assertNoSecrets(running.captured.out(), running.captured.err(), e1.token, e2.token, e3.token);
        } finally {
            System.out.print(report);
        }
    }

    /** {@code ptun_ingress_environment_NAME{environment="ENV"}}. */
    private static String environmentSample(String name, String environment) {
        return "ptun_ingress_environment_" + name + "{environment=\"" + environment + "\"}";
    }

    private static String byState(String environment, String state) {
        return "ptun_ingress_environment_tunnel_connections_by_state{environment=\"" + environment + "\",state=\""
                + state + "\"}";
    }

    /** GET /bytes?n=N through {@code authority}: exactly the sample app's N pattern bytes. */
    private static void assertPattern(HttpClient client, String authority, int n) throws Exception {
        HttpResponse<byte[]> r = client.send(HttpRequest.newBuilder(URI.create("http://" + authority + "/bytes?n=" + n))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, r.statusCode(), () -> authority + ": " + new String(r.body()));
        assertEquals(n, r.body().length, authority);
        CRC32 crc = new CRC32();
        crc.update(r.body());
        assertEquals(SampleApp.patternCrc(n).getValue(), crc.getValue(), authority + ": byte-exact");
    }

    private static JsonNode statusJson(String stateDir) {
        Result r = run("status", "--json", "--state-dir", stateDir);
        assertEquals(0, r.exitCode(), r::toString);
        try {
            return JSON.readTree(r.out());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static int proxyPort(JsonNode ready) {
        String proxy = ready.get("proxy").asText();
        return Integer.parseInt(proxy.substring(proxy.lastIndexOf(':') + 1));
    }

    private static HttpClient withCookies(JsonNode ready, CookieManager jar) throws Exception {
        HttpClient base = TestStack.proxiedClient(ready.get("proxy").asText(),
                Path.of(ready.get("credentialsFile").asText()));
        return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).proxy(base.proxy().orElseThrow())
                .authenticator(base.authenticator().orElseThrow()).cookieHandler(jar).build();
    }

    /** The grants of the session, as 'session list' shows them. */
    private static JsonNode virtualHosts(Path stateDir) throws Exception {
        Result listed = run("session", "list", "--state-dir", stateDir.toString());
        assertEquals(0, listed.exitCode(), listed::toString);
        return JSON.readTree(listed.out()).get("sessions").get(0).get("grants");
    }

    /** One environment: its own key directory, token, real gateway (metered) and sample app. */
    private static final class Environment implements AutoCloseable {
        final String name;
        final GrantIssuer issuer;
        final String token;
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final GatewayServer gateway;
        final SampleApp app;

        private Environment(Path dir, String name, String appHost, int appPort) throws Exception {
            this.name = name;
            KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
            this.issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
            this.token = issuer.issueConnectionToken(name, Duration.ofHours(1));
            this.gateway = GatewayServer.start(GatewayConfig.defaults(name, new InetSocketAddress("127.0.0.1", 0))
                    .withDrainTimeout(Duration.ofMillis(200)), keys.verificationKeys(), null, registry);
            this.app = SampleApp.start(appHost, appPort);
        }

        static Environment start(Path dir, String name, String appHost, int appPort) throws Exception {
            return new Environment(dir, name, appHost, appPort);
        }

        String url() {
            return gateway.url(false);
        }

        String grant(String host, int targetPort) {
            return issuer.issueGrant(GrantSpec.tcp(name, SESSION, host, targetPort), Duration.ofMinutes(10));
        }

        double streamsOpened() {
            return registry.get("ptun.gateway.streams.opened").counter().count();
        }

        /** Streams this gateway refused (a grant of another environment would be one). */
        double refusals() {
            return registry.find("ptun.gateway.streams.refused").counters().stream()
                    .mapToDouble(c -> c.count()).sum();
        }

        /** Drops every tunnel connection and the listener at once, as a crashed gateway would. */
        void kill() {
            GatewayCrash.crash(gateway);
        }

        @Override
        public void close() {
            app.close();
            gateway.close(); // after kill(), nothing is left to close
        }
    }
}
