package dev.previewtunnel.gateway.security;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.gateway.policy.PolicyException;
import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.SigningKey;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.mux.client.TunnelConnectException;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import dev.previewtunnel.sampleapp.RawEchoServer;
import dev.previewtunnel.testing.Await;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2StreamChannel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The attack matrix of issue 3: every case asserts the refusal code the attacker gets back AND that nothing was
 * dialed: the loopback targets ({@link RawEchoServer}s on 127.0.0.1) accepted zero connections and the gateway's
 * dial counter ({@code metrics().dialAttempts()}, incremented just before any TCP connect) did not move. Two
 * positive controls (a literal and a DNS-named target) show that the same harness does see a dial and a target
 * connection when a stream is allowed, so the zeros mean something.
 *
 * <p>Stream cases run on one connection authenticated for {@code env-a}, as a compromised or buggy ingress would
 * hold. Connection cases go through {@code TunnelClient} (the message a person sees) and a raw socket (the exact
 * HTTP status and JSON error code).
 *
 * <p>DNS: the gateway's {@link TargetPolicy} resolves names with a fixed in-test map
 * ({@link #fixedDns(String)}) standing in for DNS, so names that "resolve" off-loopback or to mixed answers are
 * deterministic and no query leaves the machine. Forbidden-target cases also check, before anything is sent,
 * that the very policy instance the gateway uses refuses the host: if a regression ever let such a host
 * through, the test fails there instead of having the gateway send a SYN to a non-loopback address.
 *
 * <p>Each case prints one JSON line ({@code {"case":...,"code":...,"detail":...,"targetConnections":0,"dials":0}});
 * a summary line follows the last case. docs/security.md quotes them.
 */
class GatewayAttackMatrixTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ENV_B = "env-b";

    @TempDir
    static Path dir;

    static RawEchoServer echo;      // the granted target, 127.0.0.1:P
    static RawEchoServer echo2;     // another local port, for the wrong-port case
    static RawEchoServer echoB;     // gateway B's target, for the cross-environment case
    static TargetPolicy policy;
    static SecurityFixture a;
    static SecurityFixture b;
    static KeyDirectory otherKeys;
    static TunnelConnection connection;
    static String grantValidOnB;

    static long baseTargets;
    static long baseDialsA;
    static long baseDialsB;
    static final List<String> lines = new ArrayList<>();
    static int passed;
    static int run;

    /** Stands in for DNS: a fixed map, no query ever leaves the process. */
    static InetAddress[] fixedDns(String host) throws UnknownHostException {
        return switch (host) {
            case "dev.preview.test" -> new InetAddress[] {ip(host, 127, 0, 0, 1)};
            case "metadata.preview.test" -> new InetAddress[] {ip(host, 169, 254, 169, 254)};
            case "rebind.preview.test" -> new InetAddress[] {ip(host, 127, 0, 0, 1), ip(host, 10, 0, 0, 5)};
            default -> throw new UnknownHostException("not in the test's fixed DNS map");
        };
    }

    private static InetAddress ip(String name, int... octets) throws UnknownHostException {
        byte[] b = new byte[octets.length];
        for (int i = 0; i < octets.length; i++) {
            b[i] = (byte) octets[i];
        }
        return InetAddress.getByAddress(name, b);
    }

    @BeforeAll
    static void start() throws Exception {
        echo = RawEchoServer.start("127.0.0.1", 0);
        echo2 = RawEchoServer.start("127.0.0.1", 0);
        echoB = RawEchoServer.start("127.0.0.1", 0);
        policy = TargetPolicy.loopbackOnly().withResolver(GatewayAttackMatrixTest::fixedDns);
        a = SecurityFixture.start(dir, c -> c.withTargetPolicy(policy));
        b = SecurityFixture.startSharingKeys(a, ENV_B, c -> c.withTargetPolicy(policy));
        otherKeys = KeyDirectory.init(dir.resolve("other-keys"));
        connection = a.connect();

        // The cross-environment grant is genuinely valid: gateway B (env-b, same keys) accepts it.
        grantValidOnB = b.grant("s-b", "127.0.0.1", echoB.port());
        TunnelConnection onB = b.connect();
        try {
            Http2StreamChannel s = SecurityFixture.open(onB, new Authority("127.0.0.1", echoB.port()), grantValidOnB);
            assertEquals("5\n", SecurityFixture.exchange(s, "hello".getBytes(StandardCharsets.US_ASCII)));
        } finally {
            onB.close();
        }
    }

    @AfterAll
    static void stop() {
        String summary = JSON.createObjectNode()
                .put("summary", "gateway-attack-matrix")
                .put("cases", run)
                .put("passed", passed)
                .put("failed", run - passed)
                .toString();
        System.out.println(summary);
        if (connection != null) {
            connection.close();
        }
        closeAll(a, b);
        closeAll(echo, echo2, echoB);
    }

    private static void closeAll(AutoCloseable... all) {
        for (AutoCloseable c : all) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception ignored) {
                // best effort in teardown
            }
        }
    }

    // ---------------------------------------------------------------- harness

    /** What the attacker got back. {@code note} is extra evidence (e.g. how fast a live stream was reset). */
    record Outcome(String code, String detail, int http, String note) {
        Outcome(String code, String detail, int http) {
            this(code, detail, http, null);
        }
    }

    @FunctionalInterface
    interface Attack {
        Outcome run() throws Exception;
    }

    /** One row: the expected outcome and how many dials/target connections it may cause (0, or 1 for controls). */
    record Case(String code, String detail, int http, int expectedDials, Attack attack) {
    }

    static Arguments refused(String name, String code, String detail, int http, Attack attack) {
        return Arguments.of(Named.of(name, new Case(code, detail, http, 0, attack)));
    }

    static Arguments control(String name, Attack attack) {
        return Arguments.of(Named.of(name, new Case("accepted", "", 200, 1, attack)));
    }

    static long targets() {
        return (long) echo.acceptedConnections() + echo2.acceptedConnections() + echoB.acceptedConnections();
    }

    /** Counters are compared against this point; cases that need setup (a live stream) call it again. */
    static void markBaseline() {
        baseTargets = targets();
        baseDialsA = a.gateway.metrics().dialAttempts();
        baseDialsB = b.gateway.metrics().dialAttempts();
    }

    @ParameterizedTest(name = "{index}: {0}")
    @MethodSource("cases")
    void attack(Case c, org.junit.jupiter.api.TestInfo info) throws Exception {
        run++;
        String name = info.getDisplayName().replaceFirst("^\\d+: ", "");
        markBaseline();
        Outcome o = c.attack().run();
        if (c.expectedDials() > 0) {
            Await.until("the target accepted the allowed connection", Duration.ofSeconds(5),
                    () -> targets() >= baseTargets + c.expectedDials());
        }
        long targetConnections = targets() - baseTargets;
        long dials = a.gateway.metrics().dialAttempts() - baseDialsA;
        long dialsB = b.gateway.metrics().dialAttempts() - baseDialsB;

        ObjectNode line = JSON.createObjectNode()
                .put("case", name)
                .put("code", o.code())
                .put("detail", o.detail())
                .put("http", o.http())
                .put("targetConnections", targetConnections)
                .put("dials", dials);
        if (o.note() != null) {
            line.put("note", o.note());
        }
        System.out.println(line);
        lines.add(line.toString());

        assertEquals(c.code(), o.code(), name + ": code");
        assertEquals(c.detail(), o.detail(), name + ": detail");
        assertEquals(c.http(), o.http(), name + ": HTTP status");
        assertEquals(c.expectedDials(), targetConnections, name + ": target connections");
        assertEquals(c.expectedDials(), dials, name + ": gateway dial attempts");
        assertEquals(0, dialsB, name + ": gateway B dial attempts");
        passed++;
    }

    // ---------------------------------------------------------------- attack helpers

    static TunnelConnection conn() throws Exception {
        if (!connection.isUsable()) {
            connection = a.connect();
        }
        return connection;
    }

    static int port() {
        return echo.port();
    }

    static Authority target() {
        return new Authority("127.0.0.1", port());
    }

    static String grant() {
        return a.grant("s-matrix", "127.0.0.1", port());
    }

    static String kid() {
        return a.keys.signingKey().kid();
    }

    /** Opens through {@link TunnelConnection#openStream} and returns the typed refusal. */
    static Outcome stream(Authority authority, String grant) throws Exception {
        TunnelStreamException e = SecurityFixture.refusal(conn(), authority, grant);
        return new Outcome(e.error().code(), e.detail(), e.error().httpStatus());
    }

    static Outcome stream(String grant) throws Exception {
        return stream(target(), grant);
    }

    /** Sends hand-made HEADERS and returns the gateway's answer. */
    static Outcome raw(Http2Headers headers) throws Exception {
        Object answer = SecurityFixture.rawOpen(conn(), headers);
        if (answer instanceof Long code) {
            Http2Error e = Http2Error.valueOf(code);
            return new Outcome("rst_stream", e == null ? String.valueOf(code) : e.name(), 0);
        }
        Http2Headers h = (Http2Headers) answer;
        return new Outcome(String.valueOf(h.get(MuxProtocol.ERROR_HEADER)),
                String.valueOf(h.get(MuxProtocol.ERROR_DETAIL_HEADER)), Integer.parseInt(h.status().toString()));
    }

    /** A forbidden target: a correctly signed grant naming {@code host}, the authority equal to it. */
    static Outcome forbidden(String host) throws Exception {
        String grant = a.grant("s-matrix", host, port());
        String grantedHost = UnverifiedGrantView.decode(grant).targetHost();
        // Safety interlock: the gateway's own policy instance must refuse this host before we ask the gateway.
        assertThrows(PolicyException.class, () -> policy.resolve(grantedHost),
                "policy must refuse " + host + " (not sending it to the gateway)");
        return stream(new Authority(host.startsWith("[") ? host.substring(1, host.length() - 1) : host, port()),
                grant);
    }

    /**
     * A refused upgrade, seen twice: through {@code TunnelClient} (the exception a person reads) and through a
     * raw socket (exact status and JSON body). Returns the raw outcome; the client's message is the note.
     */
    static Outcome upgrade(String token) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> a.connectAsync(token).get(SecurityFixture.TIMEOUT.toSeconds(), TimeUnit.SECONDS));
        TunnelConnectException client = assertInstanceOf(TunnelConnectException.class, e.getCause());
        assertFalse(token.length() > 20 && client.getMessage().contains(token.substring(0, 20)),
                "the client message must not quote the token");
        return rawUpgrade("Bearer " + token, client.getMessage());
    }

    static Outcome rawUpgrade(String authorizationOrNull, String clientMessage) throws Exception {
        SecurityFixture.RawResponse r = SecurityFixture.rawHttp(a.gateway.address(),
                SecurityFixture.upgradeRequest(a.gateway.address(), authorizationOrNull));
        JsonNode body = JSON.readTree(r.body());
        assertTrue(r.status() != 101, "upgrade must be refused");
        return new Outcome(body.path("error").asText(), body.path("message").asText(), r.status(), clientMessage);
    }

    static Http2Headers connectHeaders(String authority) {
        return new DefaultHttp2Headers().method("CONNECT").authority(authority);
    }

    static GrantIssuer issuerAt(Instant now) {
        return new GrantIssuer(a.keys.signingKey(), Clock.fixed(now, ZoneOffset.UTC));
    }

    // ---------------------------------------------------------------- the matrix

    static Stream<Arguments> cases() {
        return Stream.of(
                // Positive controls: the harness does see a dial and a target connection when one happens.
                control("control: valid grant 127.0.0.1:P is dialed once", () -> {
                    Http2StreamChannel s = SecurityFixture.open(conn(), target(), grant());
                    assertEquals("3\n", SecurityFixture.exchange(s, "abc".getBytes(StandardCharsets.US_ASCII)));
                    return new Outcome("accepted", "", 200);
                }),
                control("control: valid grant for a name resolving to 127.0.0.1 is dialed once", () -> {
                    String g = a.grant("s-matrix", "dev.preview.test", port());
                    Http2StreamChannel s = SecurityFixture.open(conn(), new Authority("dev.preview.test", port()), g);
                    assertEquals("2\n", SecurityFixture.exchange(s, "hi".getBytes(StandardCharsets.US_ASCII)));
                    return new Outcome("accepted", "", 200);
                }),

                // ---- grant signature and algorithm
                refused("wrong signature: other key, same kid", "grant_refused", "grant_bad_signature", 403, () -> {
                    GrantIssuer impostor = new GrantIssuer(new SigningKey(kid(), otherKeys.signingKey().privateKey()),
                            Clock.systemUTC());
                    return stream(impostor.issueGrant(GrantSpec.tcp(SecurityFixture.ENV, "s-matrix", "127.0.0.1",
                            port()), Duration.ofMinutes(5)));
                }),
                refused("unknown kid", "grant_refused", "grant_unknown_key", 403, () -> {
                    GrantIssuer stranger = new GrantIssuer(otherKeys.signingKey(), Clock.systemUTC());
                    return stream(stranger.issueGrant(GrantSpec.tcp(SecurityFixture.ENV, "s-matrix", "127.0.0.1",
                            port()), Duration.ofMinutes(5)));
                }),
                refused("alg none (unsigned)", "grant_refused", "grant_bad_algorithm", 403, () ->
                        stream(HostileJwts.unsigned("ptun-grant+jwt", kid(),
                                HostileJwts.grantClaims(SecurityFixture.ENV, "s-matrix", "127.0.0.1", port())))),
                refused("HS256 keyed with the gateway's public key bytes", "grant_refused", "grant_bad_algorithm", 403,
                        () -> stream(HostileJwts.hs256WithPublicKey("ptun-grant+jwt", kid(),
                                HostileJwts.grantClaims(SecurityFixture.ENV, "s-matrix", "127.0.0.1", port()),
                                a.keys.verificationKeys().find(kid()).orElseThrow()))),
                refused("RS256 with the attacker's RSA key", "grant_refused", "grant_bad_algorithm", 403, () ->
                        stream(HostileJwts.rs256("ptun-grant+jwt", kid(),
                                HostileJwts.grantClaims(SecurityFixture.ENV, "s-matrix", "127.0.0.1", port())))),
                refused("tampered payload (port changed, signature kept)", "grant_refused", "grant_bad_signature", 403,
                        () -> {
                            String real = a.grant("s-matrix", "127.0.0.1", echo2.port());
                            String forged = HostileJwts.withPayload(real, HostileJwts.payloadOf(real)
                                    .replace("\"port\":" + echo2.port(), "\"port\":" + port()));
                            return stream(forged);
                        }),

                // ---- grant time
                refused("expired", "grant_expired", "grant_expired", 401, () ->
                        stream(issuerAt(Instant.now().minus(Duration.ofMinutes(30))).issueGrant(
                                GrantSpec.tcp(SecurityFixture.ENV, "s-matrix", "127.0.0.1", port()),
                                Duration.ofMinutes(5)))),
                refused("not yet valid (nbf 10 min ahead)", "grant_refused", "grant_not_yet_valid", 403, () ->
                        stream(issuerAt(Instant.now().plus(Duration.ofMinutes(10))).issueGrant(
                                GrantSpec.tcp(SecurityFixture.ENV, "s-matrix", "127.0.0.1", port()),
                                Duration.ofMinutes(5)))),
                refused("lifetime over the maximum (1 h > 15 min)", "grant_refused", "grant_lifetime_too_long", 403,
                        () -> stream(a.issuer.issueGrant(GrantSpec.tcp(SecurityFixture.ENV, "s-matrix", "127.0.0.1",
                                port()), Duration.ofHours(1)))),

                // ---- grant binding
                refused("wrong environment", "grant_refused", "grant_wrong_environment", 403, () ->
                        stream(a.issuer.issueGrant(GrantSpec.tcp("env-other", "s-matrix", "127.0.0.1", port()),
                                Duration.ofMinutes(5)))),
                refused("cross-environment: env-b grant (valid on gateway B) on an env-a connection",
                        "grant_refused", "grant_wrong_environment", 403, () ->
                                stream(new Authority("127.0.0.1", echoB.port()), grantValidOnB)),
                refused("wrong port (grant 127.0.0.1:P used for 127.0.0.1:P2)", "grant_refused", "grant_wrong_target",
                        403, () -> stream(new Authority("127.0.0.1", echo2.port()), grant())),
                refused("wrong host (grant localhost:P used as 127.0.0.1:P)", "grant_refused", "grant_wrong_target",
                        403, () -> stream(target(), a.grant("s-matrix", "localhost", port()))),
                refused("connection token used as a grant", "grant_refused", "grant_wrong_audience", 403, () ->
                        stream(a.token)),

                // ---- grant encodings and size
                refused("grant longer than 8192 chars", "grant_refused", "grant_malformed", 403, () -> {
                    String big = a.issuer.issueGrant(new GrantSpec(SecurityFixture.ENV, "s-matrix", "127.0.0.1",
                            port(), "tcp", "p".repeat(6000), null), Duration.ofMinutes(5));
                    assertTrue(big.length() > 8192 && big.length() < 12_000, "grant length " + big.length());
                    return stream(big);
                }),
                refused("garbage: not a JWT", "grant_refused", "grant_malformed", 403, () ->
                        stream("this-is-not-a-jwt")),
                refused("malformed: two segments", "grant_refused", "grant_malformed", 403, () -> {
                    String[] p = grant().split("\\.");
                    return stream(p[0] + "." + p[1]);
                }),
                refused("malformed: five segments (JWE shape)", "grant_refused", "grant_malformed", 403, () ->
                        stream(grant() + ".AAAA.BBBB")),
                refused("malformed: header not base64url", "grant_refused", "grant_malformed", 403, () -> {
                    String[] p = grant().split("\\.");
                    return stream("*!*" + p[0].substring(3) + "." + p[1] + "." + p[2]);
                }),
                refused("malformed: header base64url of non-JSON", "grant_refused", "grant_malformed", 403, () -> {
                    String[] p = grant().split("\\.");
                    return stream(HostileJwts.b64("not json at all") + "." + p[1] + "." + p[2]);
                }),
                refused("malformed: duplicate alg in header", "grant_refused", "grant_malformed", 403, () -> {
                    String[] p = grant().split("\\.");
                    String h = HostileJwts.decode(p[0]);
                    String dup = h.substring(0, h.length() - 1) + ",\"alg\":\"none\"}";
                    return stream(HostileJwts.b64(dup) + "." + p[1] + "." + p[2]);
                }),
                // JJWT checks the signature over the raw segments before it decodes the payload, so a payload that is not
                // base64url (or not a claims object) never gets parsed: it is refused as a bad signature.
                refused("malformed: payload not base64url", "grant_refused", "grant_bad_signature", 403, () -> {
                    String[] p = grant().split("\\.");
                    return stream(p[0] + ".%%%%" + p[1].substring(4) + "." + p[2]);
                }),
                refused("malformed: signature not base64url", "grant_refused", "grant_bad_signature", 403, () -> {
                    String[] p = grant().split("\\.");
                    return stream(p[0] + "." + p[1] + ".%%%%" + p[2].substring(4));
                }),
                refused("malformed: payload a JSON array (header and signature kept)", "grant_refused",
                        "grant_bad_signature", 403,
                        () -> {
                            String[] p = grant().split("\\.");
                            return stream(p[0] + "." + HostileJwts.b64("[1,2,3]") + "." + p[2]);
                        }),

                // ---- CONNECT request shape
                refused("missing grant header", "grant_refused", "grant_missing", 403, () ->
                        raw(connectHeaders(target().toString()))),
                refused("empty grant header", "grant_refused", "grant_missing", 403, () ->
                        raw(connectHeaders(target().toString()).add(MuxProtocol.GRANT_HEADER, ""))),
                refused("duplicate grant header (both valid)", "bad_request", "duplicate_grant", 400, () ->
                        raw(connectHeaders(target().toString())
                                .add(MuxProtocol.GRANT_HEADER, grant()).add(MuxProtocol.GRANT_HEADER, grant()))),
                refused("non-CONNECT method (GET with a valid grant)", "bad_request", "method_not_connect", 400, () ->
                        raw(new DefaultHttp2Headers().method("GET").scheme("http").path("/")
                                .authority(target().toString()).add(MuxProtocol.GRANT_HEADER, grant()))),
                refused("CONNECT with :path (valid grant)", "bad_request", "connect_with_scheme_or_path", 400, () ->
                        raw(connectHeaders(target().toString()).path("/")
                                .add(MuxProtocol.GRANT_HEADER, grant()))),
                refused("CONNECT authority without a port", "bad_request", "bad_authority", 400, () ->
                        raw(connectHeaders("127.0.0.1").add(MuxProtocol.GRANT_HEADER, grant()))),

                // ---- revocation
                refused("revoked grant", "grant_revoked", "grant_revoked", 410, () -> {
                    String g = grant();
                    a.gateway.revokeGrant(UnverifiedGrantView.decode(g).jti());
                    return stream(g);
                }),
                refused("replay after revocation (live stream reset within 1 s, re-open refused)", "grant_revoked",
                        "grant_revoked", 410, () -> {
                            String g = a.grant("s-replay", "127.0.0.1", port());
                            Http2StreamChannel live = SecurityFixture.open(conn(), target(), g);
                            Await.until("target saw the live stream", Duration.ofSeconds(5),
                                    () -> targets() >= baseTargets + 1);
                            markBaseline(); // the live stream's own dial happened before the attack
                            long start = System.nanoTime();
                            assertEquals(1, a.gateway.revokeGrant(UnverifiedGrantView.decode(g).jti()));
                            Await.until("revoked live stream reset", Duration.ofSeconds(1), () -> !live.isActive());
                            long resetMillis = (System.nanoTime() - start) / 1_000_000;
                            Outcome o = stream(g);
                            return new Outcome(o.code(), o.detail(), o.http(),
                                    "live stream reset " + resetMillis + " ms after revokeGrant");
                        }),
                refused("revoked session", "grant_revoked", "grant_revoked", 410, () -> {
                    String g = a.grant("s-revoked-session", "127.0.0.1", port());
                    a.gateway.revokeSession("s-revoked-session");
                    return stream(g);
                }),

                // ---- target policy: a correctly signed grant naming the forbidden host, authority equal to it
                refused("target 169.254.169.254 (cloud metadata)", "policy_refused", "policy_link_local", 403,
                        () -> forbidden("169.254.169.254")),
                refused("target [fd00:ec2::254] (AWS IPv6 metadata)", "policy_refused", "policy_link_local", 403,
                        () -> forbidden("[fd00:ec2::254]")),
                refused("target 10.0.0.1", "policy_refused", "policy_private", 403, () -> forbidden("10.0.0.1")),
                refused("target 192.168.1.10", "policy_refused", "policy_private", 403,
                        () -> forbidden("192.168.1.10")),
                refused("target 172.16.0.1", "policy_refused", "policy_private", 403, () -> forbidden("172.16.0.1")),
                refused("target 100.64.0.1 (carrier-grade NAT)", "policy_refused", "policy_private", 403,
                        () -> forbidden("100.64.0.1")),
                refused("target 0.0.0.0", "policy_refused", "policy_unspecified_address", 403,
                        () -> forbidden("0.0.0.0")),
                refused("target [::]", "policy_refused", "policy_unspecified_address", 403, () -> forbidden("[::]")),
                refused("target 224.0.0.1 (multicast)", "policy_refused", "policy_multicast", 403,
                        () -> forbidden("224.0.0.1")),
                refused("target [::ffff:169.254.169.254] (IPv4-mapped)", "policy_refused", "policy_link_local", 403,
                        () -> forbidden("[::ffff:169.254.169.254]")),
                refused("target [::ffff:10.0.0.1] (IPv4-mapped)", "policy_refused", "policy_private", 403,
                        () -> forbidden("[::ffff:10.0.0.1]")),
                refused("target [::a9fe:a9fe] (IPv4-compatible 169.254.169.254)", "policy_refused",
                        "policy_link_local", 403, () -> forbidden("[::a9fe:a9fe]")),
                refused("target 2130706433 (decimal 127.0.0.1)", "policy_refused", "policy_ambiguous_address", 403,
                        () -> forbidden("2130706433")),
                refused("target 0x7f000001 (hex 127.0.0.1)", "policy_refused", "policy_ambiguous_address", 403,
                        () -> forbidden("0x7f000001")),
                refused("target 0177.0.0.1 (octal 127.0.0.1)", "policy_refused", "policy_ambiguous_address", 403,
                        () -> forbidden("0177.0.0.1")),
                refused("target 127.1 (short form)", "policy_refused", "policy_ambiguous_address", 403,
                        () -> forbidden("127.1")),
                refused("target name resolving to 169.254.169.254 (fixed DNS map)", "policy_refused",
                        "policy_link_local", 403, () -> forbidden("metadata.preview.test")),
                refused("target name resolving to [127.0.0.1, 10.0.0.5] (fixed DNS map)", "policy_refused",
                        "policy_private", 403, () -> forbidden("rebind.preview.test")),
                refused("target name that does not resolve", "policy_refused", "policy_unresolvable", 403,
                        () -> forbidden("nx.preview.test")),

                // ---- connection level (WebSocket upgrade)
                refused("connection: missing token", "token_missing", "connection token required", 401, () ->
                        rawUpgrade(null, null)),
                refused("connection: tampered token (exp extended, signature kept)", "token_refused",
                        "connection token refused (grant_bad_signature)", 401, () -> {
                            String p = HostileJwts.payloadOf(a.token);
                            long exp = JSON.readTree(p).get("exp").asLong();
                            return upgrade(HostileJwts.withPayload(a.token,
                                    p.replace("\"exp\":" + exp, "\"exp\":" + (exp + 86_400))));
                        }),
                refused("connection: expired token", "token_refused", "connection token refused (grant_expired)", 401,
                        () -> upgrade(issuerAt(Instant.now().minus(Duration.ofHours(2)))
                                .issueConnectionToken(SecurityFixture.ENV, Duration.ofMinutes(5)))),
                refused("connection: token for another environment (valid on gateway B)", "token_refused",
                        "connection token refused (grant_wrong_environment)", 401, () -> upgrade(b.token)),
                refused("connection: grant used as token", "token_refused",
                        "connection token refused (grant_wrong_audience)", 401, () -> upgrade(grant())),
                refused("connection: alg none token", "token_refused", "connection token refused (grant_bad_algorithm)",
                        401, () -> upgrade(HostileJwts.unsigned("ptun-token+jwt", kid(),
                                HostileJwts.tokenClaims(SecurityFixture.ENV)))),
                refused("connection: oversized token (9000 chars)", "bad_request", "malformed HTTP request", 400,
                        () -> {
                            String pad = HostileJwts.b64("{\"pad\":\"" + "x".repeat(6700) + "\"}");
                            String[] p = a.token.split("\\.");
                            String big = p[0] + "." + pad + "." + p[2];
                            assertTrue(big.length() > 9000, "token length " + big.length());
                            return upgrade(big);
                        })
        );
    }
}
