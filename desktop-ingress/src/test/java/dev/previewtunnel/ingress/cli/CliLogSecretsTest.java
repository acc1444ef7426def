package dev.previewtunnel.ingress.cli;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.admin.AdminServer;
import dev.previewtunnel.gateway.cli.GatewayMain;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Captured;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.local.http.LocalHttpServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;

import java.net.CookieManager;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A realistic session, gateway and desktop in one JVM, with every log event captured from the root logger and from
 * the audit logger: a connection token, grants (one refused by the gateway, one revoked through the admin endpoint),
 * proxy requests with a session's credential (and one with a wrong password), a cookie set and sent back, the
 * control API and the admin endpoint used through the command line. No token, grant, password, API token,
 * cookie value or Proxy-Authorization value, nor any 16-character piece of one or a JWT's signature segment,
 * appears in any log line, in any stdout line, or in any error line. Gateway and desktop log into the same capture.
 */
class CliLogSecretsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    /** Every event, rendered as the production JSON encoder writes it and as its raw parts. */
    static final class Capture extends AppenderBase<ILoggingEvent> {
        final List<String> lines = new ArrayList<>();
        private final JsonEncoder encoder = new JsonEncoder();

        Capture(LoggerContext context) {
            setContext(context);
            encoder.setContext(context);
            encoder.setWithFormattedMessage(true);
            encoder.setWithMessage(true);
            encoder.setWithArguments(true);
            encoder.setWithKVPList(true);
            encoder.setWithMDC(true);
            encoder.setWithThrowable(true);
            encoder.start();
        }

        @Override
        protected void append(ILoggingEvent event) {
            String encoded = new String(encoder.encode(event), StandardCharsets.UTF_8);
            StringBuilder raw = new StringBuilder(encoded).append('\n').append(event.getFormattedMessage());
            if (event.getArgumentArray() != null) {
                for (Object a : event.getArgumentArray()) {
                    raw.append(' ').append(a);
                }
            }
            if (event.getKeyValuePairs() != null) {
                event.getKeyValuePairs().forEach(kv -> raw.append(' ').append(kv.key).append('=').append(kv.value));
            }
            for (var t = event.getThrowableProxy(); t != null; t = t.getCause()) {
                raw.append(' ').append(t.getClassName()).append(": ").append(t.getMessage());
            }
            synchronized (lines) {
                lines.add(event.getLoggerName() + " " + raw);
            }
        }

        List<String> snapshot() {
            synchronized (lines) {
                return List.copyOf(lines);
            }
        }
    }

    @Test
    void noSecretInAnyLogLine() throws Exception {
        LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        Logger audit = context.getLogger(AuditLog.LOGGER);
        Capture capture = new Capture(context);
        capture.start();
        root.addAppender(capture);
        audit.addAppender(capture); // the audit logger does not pass its events to root (additivity false)
        List<String> outputs = new ArrayList<>();
        List<String> secrets = new ArrayList<>();
        try (TestStack stack = TestStack.start(tmp);
             AdminServer admin = AdminServer.start(stack.gateway::status, stack.gateway.revocations(),
                     new InetSocketAddress("127.0.0.1", 0), tmp.resolve("admin.token"),
                     LocalHttpServer.Limits.defaults())) {
            String adminToken = Files.readString(admin.tokenFile()).strip();
            String token = stack.token();
            String grant = stack.grant("default", stack.app.port());
            String webGrant = stack.grant("web", stack.app.port());
            String wrongEnvGrant = stack.issuer.issueGrant(GrantSpec.tcp("staging", "web", "localhost",
                    stack.app.port() + 1 > 65535 ? 1 : stack.app.port() + 1), Duration.ofMinutes(5));
            String cookie = "cookie-value-7f3a9c1e5b";
            String wrongPassword = "wrong-password-4d2e8a";
            secrets.addAll(List.of(adminToken, token, grant, webGrant, wrongEnvGrant, cookie, wrongPassword));

            Path tokenFile = TestStack.secretFile(tmp, "token", token + "\n");
            Path grantFile = TestStack.secretFile(tmp, "grant", grant + "\n");
            Path webGrants = TestStack.secretFile(tmp, "web-grants", webGrant + "\n" + wrongEnvGrant + "\n");
            Path state = tmp.resolve("state");
            RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token-file",
                    tokenFile.toString(), "--grant-file", grantFile.toString(), "--state-dir", state.toString(),
                    "--audit-file", "-"); // on the audit logger's own appenders: the capture sees every event
            try {
                JsonNode ready = running.readyLine();
                String proxy = ready.get("proxy").asText();
                secrets.add(JSON.readTree(Files.readString(state.resolve("control.json"))).get("token").asText());
                JsonNode defaultCredentials = JSON.readTree(Files.readString(Path.of(
                        ready.get("credentialsFile").asText())));
                secrets.add(defaultCredentials.get("password").asText());
                secrets.add(basic(defaultCredentials.get("username").asText(),
                        defaultCredentials.get("password").asText()));

                Result created = run("session", "create", "--id", "web", "--state-dir", state.toString());
                assertEquals(0, created.exitCode(), created::toString);
                Path webCredentials = Path.of(JSON.readTree(created.out()).get("credentialsFile").asText());
                JsonNode web1 = JSON.readTree(Files.readString(webCredentials));
                secrets.add(web1.get("password").asText());
                secrets.add(basic(web1.get("username").asText(), web1.get("password").asText()));
                secrets.add(basic("ptun-web", wrongPassword));
                Result added = run("grant", "add", "--session", "web", "--grant-file", webGrants.toString(),
                        "--state-dir", state.toString());
                assertEquals(0, added.exitCode(), added::toString);
                Result inline = run("grant", "add", "--session", "web", "--grant", webGrant, "--state-dir",
                        state.toString());
                assertEquals(0, inline.exitCode(), inline::toString);
                outputs.addAll(List.of(created.out(), created.err(), added.out(), added.err(), inline.out(),
                        inline.err()));

                // Requests with the session's credential, a cookie set and sent back.
                HttpClient web = withCookies(proxy, webCredentials);
                String base = "http://localhost:" + stack.app.port();
                assertEquals(200, get(web, base + "/cookie/set?sid=" + cookie).statusCode());
                HttpResponse<String> echoed = get(web, base + "/cookie/get");
                assertEquals(200, echoed.statusCode());
                assertTrue(echoed.body().contains(cookie), "the cookie went through");
                assertEquals(200, get(web, base + "/echo-headers").statusCode());

                // A grant the gateway refuses (another environment).
                HttpResponse<String> refused = get(web, "http://localhost:" + UnverifiedGrantView.decode(
                        wrongEnvGrant).targetPort() + "/");
                assertEquals(403, refused.statusCode(), refused::body);

                // A wrong proxy password: 407.
                HttpRequest wrong = HttpRequest.newBuilder(URI.create(base + "/hello"))
                        .header("Proxy-Authorization", "Basic " + basic("ptun-web", wrongPassword)).build();
                HttpClient plain = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                        .proxy(ProxySelector.of(hostPort(proxy))).build();
                assertEquals(407, plain.send(wrong, HttpResponse.BodyHandlers.ofString()).statusCode());

                // Revocation through the admin endpoint, from the gateway's command line.
                Result revoke = gateway("revoke", "--grant", UnverifiedGrantView.decode(webGrant).jti(), "--admin",
                        admin.url(), "--admin-token-file", admin.tokenFile().toString());
                assertEquals(0, revoke.exitCode(), revoke::toString);
                outputs.addAll(List.of(revoke.out(), revoke.err()));
                HttpResponse<String> revoked = get(withCookies(proxy, webCredentials), base + "/hello");
                assertEquals(410, revoked.statusCode(), revoked::body);
                assertEquals("grant_revoked", revoked.headers().firstValue("ptun-error").orElse(null));

                // Status and doctor read the same secrets files.
                Result status = run("status", "--json", "--state-dir", state.toString());
                Result doctor = run("doctor", "--state-dir", state.toString(), "--token-file", tokenFile.toString(),
                        "--grant-file", grantFile.toString());
                assertEquals(0, doctor.exitCode(), doctor::toString);
                outputs.addAll(List.of(status.out(), status.err(), doctor.out(), doctor.err()));
            } finally {
                running.close();
            }
            outputs.add(running.captured.out());
            outputs.add(running.captured.err());
        } finally {
            root.detachAppender(capture);
            audit.detachAppender(capture);
            capture.stop();
        }

        List<String> lines = capture.snapshot();
        // A realistic run: the decisions were logged, so the absence of secrets means something.
        for (String event : List.of("connection_opened", "stream_opened", "stream_refused", "grant_wrong_environment",
                "request_refused", "proxy_auth_required", "revoked", "stream_closed")) {
            assertTrue(lines.stream().anyMatch(l -> l.contains(event)), () -> event + " not logged in:\n"
                    + String.join("\n", lines));
        }
        assertTrue(lines.size() > 20, "events captured: " + lines.size());
        int fragments = 0;
        for (String secret : secrets) {
            assertTrue(secret.length() >= 10, "a real secret");
            // The whole secret, a JWT's signature segment, and every 16-character piece of it: a truncated or
            // partly masked secret is still a leak.
            for (String fragment : InProcessCli.secretFragments(secret)) {
                fragments++;
                for (String line : lines) {
                    assertFalse(line.contains(fragment), () -> "a secret (or part of one) in a log line: " + line);
                }
                for (String out : outputs) {
                    assertFalse(out.contains(fragment), () -> "a secret (or part of one) in command output: " + out);
                }
            }
        }
        assertTrue(fragments > 1000, "fragments searched: " + fragments);
    }

    /** The value of a {@code Proxy-Authorization: Basic} header for these credentials. */
    private static String basic(String user, String password) {
        return Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    private static InetSocketAddress hostPort(String proxy) {
        int colon = proxy.lastIndexOf(':');
        return new InetSocketAddress(proxy.substring(0, colon), Integer.parseInt(proxy.substring(colon + 1)));
    }

    private static HttpClient withCookies(String proxy, Path credentials) throws Exception {
        JsonNode c = JSON.readTree(Files.readString(credentials));
        String user = c.get("username").asText();
        String password = c.get("password").asText();
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .proxy(ProxySelector.of(hostPort(proxy)))
                .cookieHandler(new CookieManager())
                .authenticator(new java.net.Authenticator() {
                    @Override
                    protected java.net.PasswordAuthentication getPasswordAuthentication() {
                        return new java.net.PasswordAuthentication(user, password.toCharArray());
                    }
                })
                .build();
    }

    private static HttpResponse<String> get(HttpClient client, String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The gateway's command line, in-process, output captured. */
    private static Result gateway(String... args) {
        try (Captured c = new Captured()) {
            int code = new CommandLine(new GatewayMain()).execute(args);
            return IngressCliHarness.result(code, c.out(), c.err());
        }
    }
}
