package dev.previewtunnel.spikes.chain;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.ingress.control.ControlServer;
import dev.previewtunnel.ingress.refresh.CommandGrantRefresher;
import dev.previewtunnel.sampleapp.RawEchoServer;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The ingress control API, virtual hosts, live-stream ending on detach/close, redirects and grant refresh. */
class IngressControlApiTest {
    static final ObjectMapper JSON = new ObjectMapper();
    SampleApp app;
    TunnelStack stack;
    ControlServer control;
    /** JUnit deletes it after each test (a directory of its own made here was left in /tmp by every run). */
    @TempDir
    Path stateDir;
    String token;
    final HttpClient api = HttpClient.newHttpClient();
    EventLoopGroup group;

    @BeforeEach
    void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        stack = TunnelStack.start(1);
        control = ControlServer.start(stack.ingress(), stateDir, new InetSocketAddress("127.0.0.1", 0));
        token = JSON.readTree(Files.readString(control.stateFile())).get("token").asText();
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    }

    @AfterEach
    void stop() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        control.close();
        stack.close();
        app.close();
    }

    private JsonNode call(String method, String path, String body, int expectedStatus) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(control.url() + path))
                .header("Authorization", "Bearer " + token)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        HttpResponse<String> r = api.send(b.build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(expectedStatus, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    @Test
    void stateFileIsOwnerOnlyAndTheApiRefusesStrangers() throws Exception {
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(control.stateFile())));
        HttpResponse<String> anonymous = api.send(HttpRequest.newBuilder(URI.create(control.url() + "/v1/status"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(401, anonymous.statusCode());
        HttpResponse<String> fromAPage = api.send(HttpRequest.newBuilder(URI.create(control.url() + "/v1/status"))
                .header("Authorization", "Bearer " + token).header("Origin", "http://evil.example").build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(403, fromAPage.statusCode());
        // Ingress.start does not wait for the gateway: wait for the pool's first connection, then the API must say so.
        assertTrue(stack.ingress().firstConnection().await(10, TimeUnit.SECONDS), "first tunnel connection");
        JsonNode status = call("GET", "/v1/status", null, 200);
        assertEquals("connected", status.get("tunnel").get("state").asText());
    }

    @Test
    void sessionCreatedThroughTheApiGetsItsOwnCredentialAndVirtualHost() throws Exception {
        JsonNode session = call("POST", "/v1/sessions", "{\"id\":\"web\"}", 200);
        Path credentials = Path.of(session.get("credentialsFile").asText());
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(credentials)));
        JsonNode cred = JSON.readTree(Files.readString(credentials));
        String grant = stack.issuer().issueGrant(dev.previewtunnel.grants.GrantSpec.tcp(TunnelStack.ENVIRONMENT,
                "web", "localhost", app.port()), Duration.ofMinutes(5));
        JsonNode attached = call("POST", "/v1/sessions/web/grants",
                JSON.createObjectNode().put("grant", grant).put("name", "shop").toString(), 200);
        String vhost = attached.get("virtualHost").asText();
        assertEquals("shop.demo-env.preview.localhost:" + app.port(), vhost);

        HttpClient browser = ProxyClients.httpClient(stack.proxy(), cred.get("username").asText(),
                cred.get("password").asText());
        HttpResponse<String> viaVhost = browser.send(HttpRequest.newBuilder(URI.create("http://" + vhost + "/hello"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, viaVhost.statusCode());
        HttpResponse<String> viaLoopback = browser.send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + app.port() + "/hello")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, viaLoopback.statusCode());

        JsonNode list = call("GET", "/v1/sessions", null, 200);
        assertTrue(list.toString().contains("\"web\""));
        assertFalse(list.toString().contains(cred.get("password").asText()), "no password in listings");
        assertFalse(list.toString().contains(grant), "no grant in listings");
    }

    @Test
    void aVirtualHostTakenByAnotherTargetIsRefusedWith409AndTheHolderKeepsIt() throws Exception {
        call("POST", "/v1/sessions", "{\"id\":\"web\"}", 200);
        String toApp = stack.issuer().issueGrant(dev.previewtunnel.grants.GrantSpec.tcp(TunnelStack.ENVIRONMENT,
                "web", "localhost", app.port()), Duration.ofMinutes(5));
        String toOther = stack.issuer().issueGrant(dev.previewtunnel.grants.GrantSpec.tcp(TunnelStack.ENVIRONMENT,
                "web", "127.0.0.1", app.port()), Duration.ofMinutes(5));
        JsonNode holder = call("POST", "/v1/sessions/web/grants",
                JSON.createObjectNode().put("grant", toApp).put("name", "shop").toString(), 200);
        JsonNode refused = call("POST", "/v1/sessions/web/grants",
                JSON.createObjectNode().put("grant", toOther).put("name", "shop").toString(), 409);
        assertEquals("virtual_host_taken", refused.get("error").asText(), refused.toString());
        assertTrue(refused.toString().contains("shop.demo-env.preview.localhost:" + app.port() + " is already taken by "
                + "grant " + holder.get("grantId").asText()), refused.toString());
        assertFalse(refused.toString().contains(toOther), "never the grant");
        // Without a name the other host gets a virtual host of its own, beside the holder's.
        JsonNode own = call("POST", "/v1/sessions/web/grants",
                JSON.createObjectNode().put("grant", toOther).toString(), 200);
        assertEquals("127-0-0-1-p" + app.port() + ".demo-env.preview.localhost:" + app.port(),
                own.get("virtualHost").asText());
        JsonNode grants = null;
        for (JsonNode session : call("GET", "/v1/sessions", null, 200).get("sessions")) {
            if (session.get("id").asText().equals("web")) {
                grants = session.get("grants");
            }
        }
        assertTrue(grants != null, "session web listed");
        assertEquals(2, grants.size(), grants.toString());
        assertEquals("default", grants.get(0).get("gateway").asText(), "one gateway: every grant uses the default");
        JsonNode status = call("GET", "/v1/status", null, 200);
        assertEquals("preview.localhost", status.get("virtualHostSuffix").asText());
        assertEquals(0, status.get("environments").size(), status.toString());
    }

    @Test
    void detachingAGrantAndClosingASessionEndTheirLiveConnections() throws Exception {
        try (RawEchoServer echo = RawEchoServer.start("127.0.0.1", 0)) {
            String grant = stack.grant("localhost", echo.port());
            String grantId = UnverifiedGrantView.decode(grant).jti();
            EndWatcher liveEnd = new EndWatcher();
            ProxyClients.connectTunnel(group, stack.proxy(), stack.session(), "localhost", echo.port(), liveEnd, true);
            until("tunnel open", Duration.ofSeconds(10), () -> echo.acceptedConnections() == 1);
            JsonNode detached = call("DELETE", "/v1/sessions/" + stack.session().id() + "/grants/" + grantId, null, 200);
            assertEquals(1, detached.get("closedConnections").asInt());
            until("live tunnel ended", Duration.ofSeconds(1), () -> liveEnd.ended);

            stack.grant("localhost", echo.port());
            EndWatcher secondEnd = new EndWatcher();
            ProxyClients.connectTunnel(group, stack.proxy(), stack.session(), "localhost", echo.port(), secondEnd, true);
            call("DELETE", "/v1/sessions/" + stack.session().id(), null, 200);
            until("session's tunnel ended", Duration.ofSeconds(1), () -> secondEnd.ended);
        }
    }

    /** Notes the end of a tunnel as the client sees it: the ingress's FIN (half-closure allowed) or a close. */
    static final class EndWatcher extends ChannelInboundHandlerAdapter {
        volatile boolean ended;

        @Override
        public void userEventTriggered(io.netty.channel.ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof io.netty.channel.socket.ChannelInputShutdownEvent) {
                ended = true;
                ctx.close();
            }
        }

        @Override
        public void channelInactive(io.netty.channel.ChannelHandlerContext ctx) {
            ended = true;
        }

        @Override
        public void channelRead(io.netty.channel.ChannelHandlerContext ctx, Object msg) {
            io.netty.util.ReferenceCountUtil.release(msg);
        }
    }

    @Test
    void absoluteRedirectToAnAuthorityNotGrantedIsPassedOnAndAudited() throws Exception {
        stack.grant("localhost", app.port());
        HttpClient browser = ProxyClients.httpClient(stack.proxy(), stack.session());
        HttpResponse<String> r = browser.send(HttpRequest.newBuilder(URI.create("http://localhost:" + app.port()
                + "/redirect?to=https%3A%2F%2Fauth.example.invalid%2Fcallback%3Fcode%3Dsecret")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(302, r.statusCode());
        assertEquals("https://auth.example.invalid/callback?code=secret", r.headers().firstValue("location").orElse(""));
        Path audit = Path.of("target/audit-test.jsonl");
        until("redirect audited", Duration.ofSeconds(5), () -> {
            try {
                return Files.readString(audit).contains("\"event\":\"redirect_not_granted\"");
            } catch (java.io.IOException e) {
                return false;
            }
        });
        String line = Files.readAllLines(audit).stream().filter(l -> l.contains("redirect_not_granted")).findFirst()
                .orElseThrow();
        assertTrue(line.contains("https://auth.example.invalid:443"), line);
        assertFalse(line.contains("code=secret"), "the query of a redirect is never logged: " + line);
    }

    @Test
    void expiredGrantIsRefreshedOnceThroughTheHookThenTheRequestSucceeds() throws Exception {
        String expired = stack.issueGrant("localhost", app.port(), Duration.ofSeconds(1));
        stack.session().authorities().add(expired);
        String fresh = stack.issueGrant("localhost", app.port(), Duration.ofMinutes(5));
        Path script = Files.createTempFile(stateDir, "refresh", ".sh");
        Files.writeString(script, "#!/bin/sh\necho '" + fresh + "'\n");
        script.toFile().setExecutable(true);
        stack.ingress().grantRefresher(new CommandGrantRefresher(List.of(script.toString()), Duration.ofSeconds(10),
                Executors.newSingleThreadExecutor()));
        // Wait for the short grant to expire beyond the verifier's 30 s skew: issue with a past clock instead.
        String past = new dev.previewtunnel.grants.GrantIssuer(
                dev.previewtunnel.grants.KeyDirectory.open(stack.keysDir()).signingKey(),
                java.time.Clock.fixed(java.time.Instant.now().minusSeconds(600), java.time.ZoneOffset.UTC))
                .issueGrant(dev.previewtunnel.grants.GrantSpec.tcp(TunnelStack.ENVIRONMENT, stack.session().id(),
                        "localhost", app.port()), Duration.ofMinutes(5));
        stack.session().authorities().removeGrant(UnverifiedGrantView.decode(expired).jti());
        stack.session().authorities().add(past);
        HttpResponse<String> r = ProxyClients.httpClient(stack.proxy(), stack.session()).send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + app.port() + "/hello")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(UnverifiedGrantView.decode(fresh).jti(),
                stack.session().authorities().route(new dev.previewtunnel.mux.wire.Authority("localhost", app.port()))
                        .orElseThrow().grantId());
    }
}
