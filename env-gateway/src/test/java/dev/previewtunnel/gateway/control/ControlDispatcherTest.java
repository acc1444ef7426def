package dev.previewtunnel.gateway.control;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.policy.Cidr;
import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.gateway.ports.LoopbackListeners;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.SigningKey;
import dev.previewtunnel.grants.VerifiedGrant;
import dev.previewtunnel.grants.VerifiedToken;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.local.audit.AuditLog;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The control channel's request parser and dispatcher as plain objects: every op, every error code. */
class ControlDispatcherTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Instant NOW = Instant.parse("2026-12-02T06:00:00.250Z");
    private static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);

    @TempDir
    Path tmp;
    KeyDirectory keys;
    AtomicReference<SigningKey> signingKey = new AtomicReference<>();
    ListAppender<ILoggingEvent> audit = new ListAppender<>();
    ControlDispatcher dispatcher;

    @BeforeEach
    void setUp() throws IOException {
        keys = KeyDirectory.init(tmp.resolve("keys"));
        signingKey.set(keys.signingKey());
        audit.start();
        ((Logger) LoggerFactory.getLogger(AuditLog.LOGGER)).addAppender(audit);
        dispatcher = dispatcher(TargetPolicy.loopbackOnly(), Duration.ofMinutes(15));
    }

    @AfterEach
    void tearDown() {
        ((Logger) LoggerFactory.getLogger(AuditLog.LOGGER)).detachAppender(audit);
    }

    private ControlDispatcher dispatcher(TargetPolicy policy, Duration maxGrantLifetime) {
        ControlIssuer issuer = new ControlIssuer("env-1", () -> {
            SigningKey key = signingKey.get();
            if (key == null) {
                throw new IllegalStateException("no keys in /some/dir");
            }
            return key;
        }, maxGrantLifetime, policy, new AuditLog("gateway"), CLOCK);
        return new ControlDispatcher(issuer, () -> List.of(
                new LoopbackListeners.Port(5173, new TreeSet<>(List.of("127.0.0.1", "::1"))),
                new LoopbackListeners.Port(8080, new TreeSet<>(List.of("0.0.0.0")))));
    }

    private JsonNode answer(ControlDispatcher d, String line) {
        byte[] bytes = ControlDispatcher.line(d.answer(line.getBytes(StandardCharsets.UTF_8)));
        assertEquals('\n', bytes[bytes.length - 1]);
        String text = new String(bytes, 0, bytes.length - 1, StandardCharsets.UTF_8);
        assertFalse(text.contains("\n"), text);
        try {
            return JSON.readTree(text);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private JsonNode answer(String line) {
        return answer(dispatcher, line);
    }

    private static void assertError(JsonNode response, String id, String code, String words) {
        assertEquals(id, response.get("id").toString(), response::toString);
        assertEquals(code, response.get("error").asText(), response::toString);
        assertTrue(response.get("message").asText().contains(words), response::toString);
        assertEquals(3, response.size(), response::toString);
    }

    private GrantVerifier verifier() {
        return new GrantVerifier(keys.verificationKeys(), CLOCK, VerifierPolicy.defaults());
    }

    @Test
    void pingPongs() {
        assertEquals("{\"id\":10,\"pong\":true}", answer("{\"id\":10,\"op\":\"ping\"}").toString());
        assertEquals("{\"id\":\"x-1\",\"pong\":true}", answer("{\"id\":\"x-1\",\"op\":\"ping\"}").toString());
        assertEquals("{\"id\":null,\"pong\":true}", answer("{\"op\":\"ping\"}").toString());
    }

    @Test
    void tokenIsAConnectionTokenForThisEnvironment() throws Exception {
        JsonNode r = answer("{\"id\":7,\"op\":\"token\",\"ttl\":\"2h\",\"future\":{\"ignored\":true}}");
        assertEquals(List.of("expiresAt", "id", "token"), fieldNames(r));
        assertEquals(7, r.get("id").asInt());
        VerifiedToken token = verifier().verifyConnectionToken(r.get("token").asText(), "env-1");
        assertEquals(Instant.parse("2026-12-02T08:00:00Z"), token.expiresAt());
        assertEquals("2026-12-02T08:00:00Z", r.get("expiresAt").asText());

        JsonNode byDefault = answer("{\"id\":8,\"op\":\"token\"}");
        assertEquals("2026-12-02T18:00:00Z", byDefault.get("expiresAt").asText(), "12h by default");
        assertEquals("2026-12-03T06:00:00Z", answer("{\"id\":9,\"op\":\"token\",\"ttl\":\"24h\"}")
                .get("expiresAt").asText(), "24h at most");
        String audited = audit.list.get(0).getFormattedMessage();
        assertTrue(audited.contains("\"event\":\"token_issued\"") && audited.contains("\"env\":\"env-1\"")
                && audited.contains("\"tokenId\":\"" + token.jti() + "\"")
                && audited.contains("\"expiresAt\":\"2026-12-02T08:00:00Z\""), audited);
        assertFalse(audited.contains(r.get("token").asText()), audited);
    }

    @Test
    void grantIsATcpGrantForTheSessionAndTarget() throws Exception {
        JsonNode r = answer("{\"id\":8,\"op\":\"grant\",\"session\":\"S\",\"target\":\"localhost:5173\",\"ttl\":\"90s\"}");
        assertEquals(List.of("expiresAt", "grant", "grantId", "id"), fieldNames(r));
        VerifiedGrant grant = verifier().verifyGrant(r.get("grant").asText(), "env-1", "localhost:5173");
        assertEquals("S", grant.session());
        assertEquals("tcp", grant.protocol());
        assertEquals(grant.jti(), r.get("grantId").asText());
        assertEquals(Instant.parse("2026-12-02T06:01:30Z"), grant.expiresAt());
        assertEquals("2026-12-02T06:01:30Z", r.get("expiresAt").asText());
        String audited = audit.list.get(0).getFormattedMessage();
        assertTrue(audited.contains("\"event\":\"grant_issued\"") && audited.contains("\"session\":\"S\"")
                && audited.contains("\"target\":\"localhost:5173\"")
                && audited.contains("\"grantId\":\"" + grant.jti() + "\"")
                && audited.contains("\"expiresAt\":\"2026-12-02T06:01:30Z\""), audited);
        assertFalse(audited.contains(r.get("grant").asText()), audited);

        JsonNode v6 = answer("{\"id\":9,\"op\":\"grant\",\"session\":\"S\",\"target\":\"[::1]:5173\"}");
        assertEquals("2026-12-02T06:10:00Z", v6.get("expiresAt").asText(), "10m by default");
        verifier().verifyGrant(v6.get("grant").asText(), "env-1", "[::1]:5173");
    }

    @Test
    void theDefaultGrantTtlNeverExceedsWhatThisGatewayAccepts() {
        JsonNode r = answer(dispatcher(TargetPolicy.loopbackOnly(), Duration.ofMinutes(5)),
                "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"127.0.0.1:5173\"}");
        assertEquals("2026-12-02T06:05:00Z", r.get("expiresAt").asText(), r::toString);
    }

    @Test
    void portsAreThePortsCommandsObjects() {
        assertEquals("{\"id\":9,\"ports\":[{\"port\":5173,\"addresses\":[\"127.0.0.1\",\"::1\"]},"
                + "{\"port\":8080,\"addresses\":[\"0.0.0.0\"]}]}", answer("{\"id\":9,\"op\":\"ports\"}").toString());
        ControlDispatcher failing = new ControlDispatcher(new ControlIssuer("env-1", signingKey::get,
                Duration.ofMinutes(15), TargetPolicy.loopbackOnly(), new AuditLog("gateway"), CLOCK), () -> {
            throw new IOException("/proc/net/tcp: no such file");
        });
        assertError(answer(failing, "{\"id\":9,\"op\":\"ports\"}"), "9", "internal", "Linux only");
    }

    @Test
    void aNetworkServeAllowsMayBeGranted() {
        ControlDispatcher wider = dispatcher(TargetPolicy.loopbackPlus(List.of(Cidr.parse("10.0.0.0/24"))),
                Duration.ofMinutes(15));
        assertTrue(answer(wider, "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"10.0.0.5:22\"}")
                .has("grant"));
    }

    @Test
    void aNameIsGrantedWithoutDnsAndJudgedWhenDialed() throws Exception {
        JsonNode r = answer("{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"devbox.invalid:5173\"}");
        verifier().verifyGrant(r.get("grant").asText(), "env-1", "devbox.invalid:5173");
    }

    /** Each error code with its cause in words; nothing is minted (and so nothing audited) for any of them. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"localhost\"}|invalid_target|authority needs host:port",
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"localhost:0\"}|invalid_target|port",
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"user@localhost:22\"}|invalid_target|HOST:PORT",
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"10.0.0.5:22\"}|invalid_target|never dials",
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"0.0.0.0:22\"}|invalid_target|never dials",
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"169.254.169.254:80\"}|invalid_target|never dials",
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"0x7f.1:80\"}|invalid_target|never dials",
            "{\"id\":1,\"op\":\"token\",\"ttl\":\"25h\"}|ttl_too_long|24h",
            "{\"id\":1,\"op\":\"token\",\"ttl\":\"2d\"}|ttl_too_long|24h",
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"localhost:1\",\"ttl\":\"16m\"}|ttl_too_long|max-grant-lifetime",
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":\"localhost:1\",\"ttl\":\"PT901S\"}|ttl_too_long|(900s)",
            "{\"id\":1,\"op\":\"token\",\"ttl\":\"0s\"}|bad_request|ttl must be",
            "{\"id\":1,\"op\":\"token\",\"ttl\":\"500ms\"}|bad_request|ttl must be",
            "{\"id\":1,\"op\":\"token\",\"ttl\":\"PT0.5S\"}|bad_request|at least 1s",
            "{\"id\":1,\"op\":\"token\",\"ttl\":600}|bad_request|ttl must be",
            "{\"id\":1,\"op\":\"token\",\"ttl\":\"99999999999999999d\"}|bad_request|ttl must be",
            "{\"id\":1,\"op\":\"grant\",\"target\":\"localhost:1\"}|bad_request|session",
            "{\"id\":1,\"op\":\"grant\",\"session\":\" \",\"target\":\"localhost:1\"}|bad_request|session",
            "{\"id\":1,\"op\":\"grant\",\"session\":7,\"target\":\"localhost:1\"}|bad_request|session",
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\"}|bad_request|target must be a string",
            "{\"id\":1,\"op\":\"grant\",\"session\":\"S\",\"target\":5173}|bad_request|target must be a string",
            "{\"id\":1}|bad_request|op must be a string",
            "{\"id\":1,\"op\":[\"ping\"]}|bad_request|op must be a string"})
    void errorsHaveTheirCodeAndSayWhy(String line, String code, String words) {
        assertError(answer(line), "1", code, words);
        assertTrue(audit.list.isEmpty(), "nothing minted");
    }

    @Test
    void aSessionFitsInAGrantAnyGatewayReads() throws Exception {
        String longest = "s".repeat(ControlDispatcher.MAX_SESSION_CHARS);
        JsonNode r = answer("{\"id\":1,\"op\":\"grant\",\"session\":\"" + longest + "\",\"target\":\"localhost:1\"}");
        assertEquals(longest, verifier().verifyGrant(r.get("grant").asText(), "env-1", "localhost:1").session());
        assertError(answer("{\"id\":2,\"op\":\"grant\",\"session\":\"" + longest + "s\",\"target\":\"localhost:1\"}"),
                "2", "bad_request", "session longer than 1024 characters");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "not json", "{\"id\":1,\"op\":\"ping\"", "{\"id\":1,\"op\":\"ping\"} {}",
            "{\"id\":1,\"id\":2,\"op\":\"ping\"}", "[1,2]", "7", "\"ping\"", "null", "\u00ff\u00fe"})
    void linesThatAreNoSingleJsonObjectAreBadRequestsWithoutAnId(String line) {
        JsonNode r = answer(line);
        assertEquals("null", r.get("id").toString(), r::toString);
        assertEquals("bad_request", r.get("error").asText(), r::toString);
    }

    @Test
    void invalidUtf8IsABadRequest() {
        byte[] line = {'{', '"', 'o', 'p', '"', ':', '"', (byte) 0xC3, (byte) 0x28, '"', '}'};
        JsonNode r;
        try {
            r = JSON.readTree(ControlDispatcher.line(dispatcher.answer(line)));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        assertError(r, "null", "bad_request", "not valid JSON");
    }

    @Test
    void anIdThatIsNeitherNumberNorStringIsABadRequest() {
        assertError(answer("{\"id\":{\"a\":1},\"op\":\"ping\"}"), "null", "bad_request", "id must be");
        assertError(answer("{\"id\":true,\"op\":\"ping\"}"), "null", "bad_request", "id must be");
    }

    @Test
    void unknownOpsAreNamedAsSuch() {
        JsonNode r = answer("{\"id\":4,\"op\":\"eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2ln\"}");
        assertError(r, "4", "unknown_op", "the ops are token, grant, ports, ping");
        assertFalse(r.toString().contains("eyJ"), "the request's text is never repeated");
    }

    @Test
    void aSigningKeyThatCannotBeReadIsInternalAndSaysWhereToLook() {
        signingKey.set(null);
        JsonNode r = answer("{\"id\":5,\"op\":\"token\"}");
        assertError(r, "5", "internal", "see the gateway's log");
        assertFalse(r.toString().contains("/some/dir"), r::toString);
    }

    @Test
    void anOverlongLineIsABadRequestWithoutAnId() throws IOException {
        JsonNode r = JSON.readTree(ControlDispatcher.line(dispatcher.overlong(65536)));
        assertError(r, "null", "bad_request", "longer than 65536 bytes");
    }

    private static List<String> fieldNames(JsonNode node) {
        List<String> names = new java.util.ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        names.sort(null);
        return names;
    }
}
