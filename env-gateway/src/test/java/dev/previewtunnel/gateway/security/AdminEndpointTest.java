package dev.previewtunnel.gateway.security;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.admin.AdminServer;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import dev.previewtunnel.sampleapp.RawEchoServer;
import dev.previewtunnel.testing.Await;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The gateway's admin endpoint (revocation, status) on 127.0.0.1:0: its token file, the checks that run before
 * the token (no Origin, loopback Host), and revocation by session and by grant id ending live streams within a
 * second and refusing new ones.
 */
class AdminEndpointTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    SecurityFixture fixture;
    RawEchoServer echo;
    AdminServer admin;
    String adminToken;
    TunnelConnection connection;

    @BeforeEach
    void start() throws Exception {
        echo = RawEchoServer.start("127.0.0.1", 0);
        fixture = SecurityFixture.start(dir, c -> c);
        admin = fixture.gateway.startAdmin(new InetSocketAddress("127.0.0.1", 0), dir.resolve("admin/admin.token"));
        adminToken = Files.readString(admin.tokenFile(), StandardCharsets.US_ASCII).trim();
        connection = fixture.connect();
    }

    @AfterEach
    void stop() {
        if (connection != null) {
            connection.close();
        }
        fixture.close();
        echo.close();
    }

    private SecurityFixture.RawResponse request(String method, String path, String host, String authorization,
                                                String origin, String body) throws Exception {
        StringBuilder req = new StringBuilder()
                .append(method).append(' ').append(path).append(" HTTP/1.1\r\n")
                .append("Host: ").append(host).append("\r\n")
                .append("Connection: close\r\n");
        if (authorization != null) {
            req.append("Authorization: ").append(authorization).append("\r\n");
        }
        if (origin != null) {
            req.append("Origin: ").append(origin).append("\r\n");
        }
        byte[] payload = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        if (body != null) {
            req.append("Content-Type: application/json\r\n");
        }
        req.append("Content-Length: ").append(payload.length).append("\r\n\r\n");
        if (body != null) {
            req.append(body);
        }
        return SecurityFixture.rawHttp(admin.address(), req.toString());
    }

    private String host() {
        return "127.0.0.1:" + admin.address().getPort();
    }

    private SecurityFixture.RawResponse authorized(String method, String path, String body) throws Exception {
        return request(method, path, host(), "Bearer " + adminToken, null, body);
    }

    private static String error(SecurityFixture.RawResponse r) throws Exception {
        return JSON.readTree(r.body()).path("error").asText();
    }

    private Authority target() {
        return new Authority("127.0.0.1", echo.port());
    }

    @Test
    void tokenFileIsOwnerOnlyAndTheEndpointIsLoopbackOnly() throws Exception {
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(admin.tokenFile())));
        assertTrue(adminToken.length() >= 43, "a 256-bit token");
        assertTrue(admin.address().getAddress().isLoopbackAddress());
        assertThrows(IllegalArgumentException.class,
                () -> fixture.gateway.startAdmin(new InetSocketAddress("0.0.0.0", 0), dir.resolve("other.token")));
    }

    @Test
    void statusNeedsTheTokenAndRefusesWebPagesAndForeignHosts() throws Exception {
        SecurityFixture.RawResponse none = request("GET", "/v1/status", host(), null, null, null);
        assertEquals(401, none.status());
        assertTrue(none.header("www-authenticate").startsWith("Bearer"), none.headers().toString());
        assertEquals("token_refused", error(none));

        SecurityFixture.RawResponse wrong = request("GET", "/v1/status", host(), "Bearer " + adminToken + "x", null,
                null);
        assertEquals(401, wrong.status());
        SecurityFixture.RawResponse basic = request("GET", "/v1/status", host(), "Basic " + adminToken, null, null);
        assertEquals(401, basic.status());

        // A web page (any Origin) is refused even with the right token.
        SecurityFixture.RawResponse fromPage = request("GET", "/v1/status", host(), "Bearer " + adminToken,
                "http://evil.example", null);
        assertEquals(403, fromPage.status());
        assertEquals("browser_requests_refused", error(fromPage));
        SecurityFixture.RawResponse fromLocalPage = request("GET", "/v1/status", host(), "Bearer " + adminToken,
                "http://localhost:5173", null);
        assertEquals(403, fromLocalPage.status());

        // DNS rebinding: a foreign Host is refused even with the right token.
        SecurityFixture.RawResponse rebound = request("GET", "/v1/status", "evil.example", "Bearer " + adminToken,
                null, null);
        assertEquals(403, rebound.status());
        assertEquals("host_not_allowed", error(rebound));
        assertEquals(403, request("GET", "/v1/status", "evil.example:" + admin.address().getPort(),
                "Bearer " + adminToken, null, null).status());

        SecurityFixture.RawResponse ok = authorized("GET", "/v1/status", null);
        assertEquals(200, ok.status());
        JsonNode status = JSON.readTree(ok.body());
        assertEquals(SecurityFixture.ENV, status.path("env").asText());
        assertEquals(1, status.path("connections").asInt());
        assertEquals(0, status.path("liveStreams").asInt());
        assertFalse(ok.body().contains(adminToken), "the token is never echoed");
        assertEquals(200, request("GET", "/v1/status", "localhost:" + admin.address().getPort(),
                "Bearer " + adminToken, null, null).status());
        assertEquals(404, authorized("GET", "/v1/nothing", null).status());
    }

    @Test
    void revokingASessionResetsItsLiveStreamWithinASecondAndRefusesNewOnes() throws Exception {
        String grant = fixture.grant("s-admin-session", "127.0.0.1", echo.port());
        Http2StreamChannel live = SecurityFixture.open(connection, target(), grant);
        assertTrue(echo.awaitAcceptedConnections(1, Duration.ofSeconds(5)));
        Await.until("stream registered", Duration.ofSeconds(5), () -> fixture.gateway.liveStreams().size() == 1);
        int targetsBefore = echo.acceptedConnections();
        long dialsBefore = fixture.gateway.metrics().dialAttempts();

        long start = System.nanoTime();
        SecurityFixture.RawResponse r = authorized("POST", "/v1/revoke", "{\"session\":\"s-admin-session\"}");
        assertEquals(200, r.status(), r.body());
        JsonNode body = JSON.readTree(r.body());
        assertEquals("session", body.path("revoked").asText());
        assertEquals(1, body.path("closedStreams").asInt());
        Await.until("live stream of the revoked session reset", Duration.ofSeconds(1), () -> !live.isActive());
        long millis = (System.nanoTime() - start) / 1_000_000;
        System.out.println("{\"test\":\"admin revoke session\",\"liveStreamResetMillis\":" + millis + "}");
        Await.until("live stream unregistered", Duration.ofSeconds(1), () -> fixture.gateway.liveStreams().size() == 0);

        TunnelStreamException e = SecurityFixture.refusal(connection, target(), grant);
        assertEquals(TunnelError.GRANT_REVOKED, e.error());
        assertEquals("grant_revoked", e.detail());
        assertEquals(targetsBefore, echo.acceptedConnections(), "nothing dialed for the revoked session");
        assertEquals(dialsBefore, fixture.gateway.metrics().dialAttempts());
        assertTrue(connection.isUsable(), "revocation ends streams, not the tunnel connection");
    }

    @Test
    void revokingAGrantResetsItsLiveStreamWithinASecondAndLeavesOtherGrantsAlone() throws Exception {
        String grant = fixture.grant("s-admin-grant", "127.0.0.1", echo.port());
        String sibling = fixture.grant("s-admin-grant", "127.0.0.1", echo.port());
        Http2StreamChannel live = SecurityFixture.open(connection, target(), grant);
        Http2StreamChannel other = SecurityFixture.open(connection, target(), sibling);
        Await.until("streams registered", Duration.ofSeconds(5), () -> fixture.gateway.liveStreams().size() == 2);
        assertTrue(echo.awaitAcceptedConnections(2, Duration.ofSeconds(5)), "target accepted both streams");
        String jti = UnverifiedGrantView.decode(grant).jti();

        long start = System.nanoTime();
        SecurityFixture.RawResponse r = authorized("POST", "/v1/revoke", "{\"grant\":\"" + jti + "\"}");
        assertEquals(200, r.status(), r.body());
        assertEquals("grant", JSON.readTree(r.body()).path("revoked").asText());
        assertEquals(1, JSON.readTree(r.body()).path("closedStreams").asInt());
        Await.until("live stream of the revoked grant reset", Duration.ofSeconds(1), () -> !live.isActive());
        long millis = (System.nanoTime() - start) / 1_000_000;
        System.out.println("{\"test\":\"admin revoke grant\",\"liveStreamResetMillis\":" + millis + "}");

        int targetsBefore = echo.acceptedConnections();
        long dialsBefore = fixture.gateway.metrics().dialAttempts();
        TunnelStreamException e = SecurityFixture.refusal(connection, target(), grant);
        assertEquals(TunnelError.GRANT_REVOKED, e.error());
        assertEquals("grant_revoked", e.detail());
        assertEquals(targetsBefore, echo.acceptedConnections());
        assertEquals(dialsBefore, fixture.gateway.metrics().dialAttempts());

        // The other grant of the same session is untouched: its stream still moves bytes.
        assertTrue(other.isActive());
        assertEquals("4\n", SecurityFixture.exchange(other, "ping".getBytes(StandardCharsets.US_ASCII)));
    }

    @Test
    void malformedRevocationsAreRefusedWith400() throws Exception {
        SecurityFixture.RawResponse notJson = authorized("POST", "/v1/revoke", "{not json");
        assertEquals(400, notJson.status());
        assertEquals("bad_json", error(notJson));
        for (String body : new String[] {"{}", "{\"grant\":5}", "{\"grant\":\"\"}", "[\"grant\"]",
                "{\"grant\":\"a\",\"session\":\"b\"}"}) {
            SecurityFixture.RawResponse r = authorized("POST", "/v1/revoke", body);
            assertEquals(400, r.status(), body + " -> " + r.body());
            assertEquals("bad_request", error(r), body);
        }
        SecurityFixture.RawResponse empty = authorized("POST", "/v1/revoke", null);
        assertEquals(400, empty.status());
        // A refused revocation revoked nothing.
        String grant = fixture.grant("s-admin-bad", "127.0.0.1", echo.port());
        Http2StreamChannel s = SecurityFixture.open(connection, target(), grant);
        assertEquals("2\n", SecurityFixture.exchange(s, "ok".getBytes(StandardCharsets.US_ASCII)));
    }
}
